"""The model zoo: generated int8/float models of the families users deploy to
microcontrollers, the shared MLPerf Tiny and third-party models, and a
catalogue of all of them read from the files."""
