"""Model frontends: turn a model file into MLIR that IREE's pipeline accepts."""

from npukit.frontends.model_format import ModelFormat, detect_format
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_import import import_model

__all__ = ["ModelFormat", "detect_format", "ImportedModel", "import_model"]
