"""Parsing of flavor extra specs (DESIGN §4). Placeholder: see issue 3."""
