"""apidb: the API catalog. Real tool catalogs in, one normalized `ApiRecord` per API out."""
from .catalog import Catalog, SyncReport
from .errors import CatalogError, LoadError, ToolsiftError
from .location import default_db_path
from .record import ApiRecord

__all__ = ["ApiRecord", "Catalog", "CatalogError", "LoadError", "SyncReport", "ToolsiftError",
           "default_db_path"]
