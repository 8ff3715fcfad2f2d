"""A run's JSON documents validated once, where they are read back (the archive, a spool file):
every reader then holds what documents.py declares, and checks no shape again.

Each declared key of a document is checked against its declared type (strictly: JSON's true is
no number, a number no text); a key whose value does not fit, as an older pgrig or a damaged
record may have written it, reads as missing, which every reader of a `total=False` document
already handles. Keys a document does not declare are kept as they are (an older or newer
pgrig's). Values are kept as read, not converted: a checked document prints as it was stored.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from functools import cache
from typing import TYPE_CHECKING, TypeVar, cast, get_type_hints

from pgrig.record.json_values import JsonObject, JsonValue

if TYPE_CHECKING:
    from pydantic import TypeAdapter

log = logging.getLogger(__name__)

D = TypeVar("D")


@cache
def _hints(doc_type: Hashable) -> dict[str, object]:
    return get_type_hints(doc_type)


@cache
def _adapter(doc_type: Hashable, key: str) -> TypeAdapter[object]:
    from pydantic import TypeAdapter  # its import is paid by the commands that read documents

    return TypeAdapter(_hints(doc_type)[key])


def read_document(doc_type: type[D], raw: JsonValue | object) -> D:
    """`raw` as a `doc_type` (a TypedDict of documents.py): {} when it is no JSON object, each
    declared key that does not fit its type left out."""
    from pydantic import ValidationError

    if not isinstance(raw, dict):
        return cast(D, {})
    doc: JsonObject = {}
    key_of = cast(Hashable, doc_type)  # a class is hashable; mypy does not see it of type[D]
    declared = _hints(key_of)
    for key, value in raw.items():
        if key in declared:
            try:
                _adapter(key_of, key).validate_python(value, strict=True)
            except ValidationError as e:
                log.debug("%s.%s does not fit its declared type: %s", doc_type, key, e)
                continue
        doc[str(key)] = value
    return cast(D, doc)
