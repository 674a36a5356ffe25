"""Static stack bounds of compiled programs, read from their machine code."""
