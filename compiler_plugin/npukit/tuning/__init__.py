"""``npukit tune``: measuring each layer's kernel choices on a board or the
host and storing the winners (npukit.cpu.tuning_database)."""
