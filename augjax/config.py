"""Configs: any op, chain, composite or policy as a JSON-ready dict, and back (see
:mod:`augjax.chain._config` for the format). This module sits above the chains and the
policies: importing it registers every built-in composite kind."""

import augjax.policies  # noqa: F401 - registers the policy kinds
from augjax.chain import CONFIG_VERSION, from_dict, from_json, to_dict, to_json

__all__ = ["CONFIG_VERSION", "from_dict", "from_json", "to_dict", "to_json"]
