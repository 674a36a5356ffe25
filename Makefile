# The two commands of npukit (see README.md). Each sets up what it needs first:
# Debian packages (when missing), then the project's virtual environment.
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: demo test

demo:
	@NPUKIT_VENV=$(VENV) scripts/setup.sh demo
	@$(VENV)/bin/python samples/digits/demo.py

test:
	@NPUKIT_VENV=$(VENV) scripts/setup.sh test
	@$(VENV)/bin/python -m pytest -n auto $(PYTEST_ARGS)
