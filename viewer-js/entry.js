// linkdyn's viewer bundle: the parts of three.js the page uses, and OrbitControls, exposed as
// window.THREE for the page template in src/linkdyn/viz/viewer.py.  Named imports only, so that
// esbuild leaves out the rest of three.js (a third of the size of the whole library).
import {
  ACESFilmicToneMapping, AmbientLight, ArrowHelper, BoxGeometry, BufferAttribute, BufferGeometry,
  CanvasTexture, CapsuleGeometry, Color, ConeGeometry, CylinderGeometry, DirectionalLight, DoubleSide,
  Float32BufferAttribute, Fog, GridHelper, Group, HemisphereLight, InstancedMesh, Line, LineBasicMaterial,
  LineDashedMaterial, LineSegments, Matrix4, Mesh, MeshBasicMaterial, MeshStandardMaterial, Object3D,
  PCFShadowMap, PerspectiveCamera, PlaneGeometry, Quaternion, Scene, ShadowMaterial, SphereGeometry,
  SRGBColorSpace, Sprite, SpriteMaterial, Vector3, WebGLRenderer,
} from "three";
import { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";

window.THREE = {
  ACESFilmicToneMapping, AmbientLight, ArrowHelper, BoxGeometry, BufferAttribute, BufferGeometry,
  CanvasTexture, CapsuleGeometry, Color, ConeGeometry, CylinderGeometry, DirectionalLight, DoubleSide,
  Float32BufferAttribute, Fog, GridHelper, Group, HemisphereLight, InstancedMesh, Line, LineBasicMaterial,
  LineDashedMaterial, LineSegments, Matrix4, Mesh, MeshBasicMaterial, MeshStandardMaterial, Object3D,
  PCFShadowMap, PerspectiveCamera, PlaneGeometry, Quaternion, Scene, ShadowMaterial, SphereGeometry,
  SRGBColorSpace, Sprite, SpriteMaterial, Vector3, WebGLRenderer, OrbitControls,
};
