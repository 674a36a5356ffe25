"""The compile driver that hosts npukit's passes around IREE's pipeline."""
