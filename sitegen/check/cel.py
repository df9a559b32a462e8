"""cel-python's environment, with its parser's tables kept in the git-ignored cache: cel-python builds
CEL's LALR parser with Lark at its first use, 0.1 s of every process that judges an admission policy
(validate, bringup, check, each test worker). Lark keeps the tables by the grammar, its options and
Lark's version, so a cel-python or Lark upgrade builds them again."""

from __future__ import annotations

import re
from pathlib import Path

import celpy
import lark
from celpy.celparser import CELParser

from sitegen.cache import cache_dir

# cel-python's own options for its Lark parser (celpy/celparser.py, CELParser.__init__); tests/test_cel.py
# holds them against the parser cel-python builds itself
PARSER_OPTIONS = {
    "parser": "lalr",
    "start": "expr",
    "debug": True,
    "g_regex_flags": re.M,
    "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals},
    "propagate_positions": True,
    "maybe_placeholders": False,
    "priority": "invert",
    "tree_class": celpy.InterpretedRunner.tree_node_class,  # what Environment() asks of CELParser
}


def grammar() -> str:
    return (Path(celpy.__file__).parent / "cel.lark").read_text()


def environment() -> celpy.Environment:
    if CELParser.CEL_PARSER is None:
        target = cache_dir() / "cel" / f"parser-{lark.__version__}.lark"
        target.parent.mkdir(parents=True, exist_ok=True)
        CELParser.CEL_PARSER = lark.Lark(grammar(), cache=str(target), **PARSER_OPTIONS)
    return celpy.Environment()
