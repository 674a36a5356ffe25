"""The Jinja environment of the firmware templates (deploy/templates/)."""

from __future__ import annotations

from functools import cache

import jinja2


@cache
def template_environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("npukit.deploy", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
