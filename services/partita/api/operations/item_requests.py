"""The P1 names of the item validators, kept for callers written against them.

Each operation now has its own module (`put_item`, `get_item`, `delete_item`, ...).
"""

from __future__ import annotations

from partita.api.operations.delete_item import validate as validate_delete
from partita.api.operations.get_item import validate as validate_get
from partita.api.operations.put_item import validate as validate_put

__all__ = ["validate_delete", "validate_get", "validate_put"]
