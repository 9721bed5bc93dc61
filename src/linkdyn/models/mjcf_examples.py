"""Scenes written in MuJoCo's MJCF, to run the same model in linkdyn and in MuJoCo and compare.

``humanoid_xml``: a passive 16-body humanoid dropped on a floor; ``incline_xml``: a box on four
corner spheres resting on an inclined plane.  Both use only contact geometry that the two
simulators treat alike (spheres against planes, ``linkdyn.model.io.mjcf``), so their outcomes can
be compared: MuJoCo's contacts are soft (a constraint with a time constant, Todorov 2014),
linkdyn's are hard (complementarity), so the trajectories differ in detail but not in what
happens.  ``benchmarks/bench_mujoco.py`` runs both and prints the wall time ratios.

    >>> import linkdyn as ld
    >>> from linkdyn.models.mjcf_examples import humanoid_xml
    >>> model, info = ld.parse_mjcf(humanoid_xml(tilt=0.15), return_info=True)
    >>> sim = ld.Simulation(model, info.q0, contact_method="timestep")
"""
from __future__ import annotations

import math

import numpy as np


def incline_xml(theta: float, mu: float, radius: float = 0.005, integrator: str = "RK4",
                timestep: float = 1e-3) -> str:
    """A 2 kg box (0.2 x 0.2 x 0.1 m) on four corner spheres of ``radius``, resting on a plane
    tilted by ``theta`` (rad) about y, friction ``mu``.  It sticks for tan(theta) < mu and
    otherwise slides with a = g (sin theta - mu cos theta)."""
    corners = "".join(f'<geom name="c{k}" pos="{sx * 0.1} {sy * 0.1} -0.05" size="{radius}"/>'
                      for k, (sx, sy) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]))
    R = np.array([[math.cos(theta), 0, math.sin(theta)], [0, 1, 0], [-math.sin(theta), 0, math.cos(theta)]])
    pos = R @ np.array([0, 0, 0.05 + radius])
    return f"""<mujoco model="incline"><compiler angle="radian"/>
<option timestep="{timestep}" integrator="{integrator}" cone="elliptic"/>
<default><geom friction="{mu}"/></default>
<worldbody><geom name="slope" type="plane" size="5 5 0.1" euler="0 {theta} 0"/>
<body name="box" pos="{pos[0]} {pos[1]} {pos[2]}" euler="0 {theta} 0"><freejoint name="root"/>
<inertial pos="0 0 0" mass="2" diaginertia="0.0083 0.0083 0.0133"/>
<geom type="box" size="0.1 0.1 0.05" contype="0" conaffinity="0"/>{corners}</body></worldbody></mujoco>"""


def humanoid_xml(drop: float = 0.3, tilt: float = 0.0, roll: float = 0.0, friction: float = 0.8,
                 integrator: str = "RK4", timestep: float = 1e-3, armature: float = 0.05, damping: float = 2.0,
                 z=None) -> str:
    """A 16-body passive humanoid (35 velocities: a free pelvis, ball joints at the abdomen, chest,
    neck, hips and shoulders, hinges at the knees, ankles, elbows and wrists, all with limits,
    armature and damping) standing with straight legs, its soles ``drop`` above a floor plane,
    the pelvis pitched by ``tilt`` and rolled by ``roll`` (rad; MuJoCo's euler angles).

    Its contact geometry is spheres (4 per sole, knees, calves, elbows, hands, pelvis and chest
    corners, head) against the plane, the kind both simulators model the same way; the capsules
    and boxes are drawn only (``contype="0" conaffinity="0"``).  ``integrator`` and
    ``timestep`` go to MuJoCo's ``<option>``."""
    z0 = 0.06 + 0.84 + 0.065 + drop
    r_foot = 0.01
    feet = "".join(f'<geom class="contact" size="{r_foot}" pos="{x} {y} {-0.055 + r_foot - r_foot}"/>'
                   for x in (0.14, -0.06) for y in (0.04, -0.04))
    def leg(side, y):
        return f"""
      <body name="{side}_thigh" pos="0 {y} -0.06">
        <joint name="{side}_hip" type="ball" range="0 100"/>
        <geom class="body" type="capsule" size="0.06" fromto="0 0 0 0 0 -0.38"/>
        <body name="{side}_shin" pos="0 0 -0.42">
          <joint name="{side}_knee" axis="0 1 0" range="0 150"/>
          <geom class="body" type="capsule" size="0.045" fromto="0 0 -0.02 0 0 -0.38"/>
          <geom class="contact" name="{side}_knee_c" size="0.04" pos="0.03 0 0"/>
          <geom class="contact" name="{side}_calf_c" size="0.05" pos="-0.03 0 -0.2"/>
          <body name="{side}_foot" pos="0 0 -0.42">
            <joint name="{side}_ankle" axis="0 1 0" range="-45 45"/>
            <geom class="body" type="box" size="0.1 0.045 0.025" pos="0.04 0 -0.03"/>
            {feet}
          </body>
        </body>
      </body>"""
    def arm(side, y):
        return f"""
        <body name="{side}_upper_arm" pos="0 {y} 0.17">
          <joint name="{side}_shoulder" type="ball" range="0 120"/>
          <geom class="body" type="capsule" size="0.04" fromto="0 0 0 0 0 -0.26"/>
          <geom class="contact" name="{side}_elbow_c" size="0.035" pos="0 0 -0.29"/>
          <body name="{side}_forearm" pos="0 0 -0.29">
            <joint name="{side}_elbow" axis="0 1 0" range="-150 0"/>
            <geom class="body" type="capsule" size="0.035" fromto="0 0 0 0 0 -0.22"/>
            <body name="{side}_hand" pos="0 0 -0.25">
              <joint name="{side}_wrist" axis="1 0 0" range="-60 60"/>
              <geom class="body" type="box" size="0.02 0.04 0.05" pos="0 0 -0.04"/>
              <geom class="contact" name="{side}_hand_c" size="0.04" pos="0 0 -0.05"/>
            </body>
          </body>
        </body>"""
    return f"""<mujoco model="humanoid">
  <option timestep="{timestep}" integrator="{integrator}" cone="elliptic"/>
  <default>
    <joint armature="{armature}" damping="{damping}"/>
    <geom friction="{friction}"/>
    <default class="body"><geom contype="0" conaffinity="0" density="1000"/></default>
    <default class="contact"><geom type="sphere" density="0" contype="1" conaffinity="2"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" contype="2" conaffinity="1"/>
    <body name="pelvis" pos="0 0 {z0 if z is None else z}" euler="{roll} {tilt} 0">
      <freejoint name="root"/>
      <geom class="body" type="box" size="0.08 0.14 0.06"/>
      <geom class="contact" name="pelvis_lb" size="0.04" pos="-0.05 0.08 -0.04"/>
      <geom class="contact" name="pelvis_rb" size="0.04" pos="-0.05 -0.08 -0.04"/>
      <geom class="contact" name="pelvis_lt" size="0.04" pos="-0.05 0.08 0.04"/>
      <geom class="contact" name="pelvis_rt" size="0.04" pos="-0.05 -0.08 0.04"/>
      <body name="abdomen" pos="0 0 0.08">
        <joint name="abdomen" type="ball" range="0 45"/>
        <geom class="body" type="capsule" size="0.07" fromto="0 0 0 0 0 0.12"/>
        <body name="chest" pos="0 0 0.17">
          <joint name="chest" type="ball" range="0 30"/>
          <geom class="body" type="box" size="0.09 0.15 0.1" pos="0 0 0.08"/>
          <geom class="contact" name="chest_lb" size="0.04" pos="-0.06 0.1 0.02"/>
          <geom class="contact" name="chest_rb" size="0.04" pos="-0.06 -0.1 0.02"/>
          <geom class="contact" name="chest_lt" size="0.04" pos="-0.06 0.1 0.15"/>
          <geom class="contact" name="chest_rt" size="0.04" pos="-0.06 -0.1 0.15"/>
          <body name="head" pos="0 0 0.22">
            <joint name="neck" type="ball" range="0 40"/>
            <geom class="contact" name="head_c" size="0.1" pos="0 0 0.12" density="1000"/>
          </body>
          {arm("l", 0.2)}
          {arm("r", -0.2)}
        </body>
      </body>
      {leg("l", 0.1)}
      {leg("r", -0.1)}
    </body>
  </worldbody>
</mujoco>"""
