"""TFLite models read from their flatbuffer and lowered to MLIR operator by
operator (importer), with TFLite's reference integer arithmetic."""
