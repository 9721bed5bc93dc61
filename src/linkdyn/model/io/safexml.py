"""Safe parsing of untrusted XML (URDF, MJCF) with defusedxml: document type declarations,
entity declarations and external references are refused, and every failure becomes the
importer's own error class with a message naming the source."""
from xml.etree.ElementTree import ParseError

import defusedxml
import defusedxml.ElementTree as SafeET


def parse_xml(text, source, error, fmt):
    """The root element of ``text``; ``error`` (an exception class) for anything refused or
    malformed, its message starting with ``source``; ``fmt`` names the format ("URDF")."""
    try:
        return SafeET.fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except defusedxml.DTDForbidden as exc:
        raise error(f"{source}: refused: the XML has a document type declaration (<!DOCTYPE ...>), which "
                    f"{fmt} does not need and which can hide entity bombs or external references ({exc})") from None
    except defusedxml.EntitiesForbidden as exc:
        raise error(f"{source}: refused: the XML declares entities ({exc})") from None
    except defusedxml.ExternalReferenceForbidden as exc:
        raise error(f"{source}: refused: the XML refers to an external resource ({exc})") from None
    except defusedxml.DefusedXmlException as exc:
        raise error(f"{source}: refused: unsafe XML ({type(exc).__name__}: {exc})") from None
    except ParseError as exc:
        raise error(f"{source}: not well-formed XML: {exc}") from None
    except (ValueError, UnicodeError) as exc:       # e.g. an encoding declaration in a str
        raise error(f"{source}: cannot read the XML: {exc}") from None
