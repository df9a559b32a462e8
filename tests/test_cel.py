"""cel-python's parser built from the cached tables (sitegen/check/cel.py) is the one cel-python builds
itself: the same grammar and options, so the same expressions mean the same."""

from __future__ import annotations

import celpy
import pytest
from celpy.celparser import CELParser

from sitegen.check import cel

UNCACHED = ("cache", "cache_grammar")


@pytest.fixture
def own_parser():
    """cel-python's parser as cel-python builds it, put back to ours afterwards."""
    ours = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    celpy.Environment()
    yield CELParser.CEL_PARSER
    CELParser.CEL_PARSER = ours


def _options(parser) -> dict:
    return {k: v for k, v in parser.options.options.items() if k not in UNCACHED}


def test_the_cached_parser_has_cel_pythons_grammar_and_options(own_parser, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path))
    CELParser.CEL_PARSER = None
    cel.environment()  # builds the tables and stores them
    CELParser.CEL_PARSER = None
    env = cel.environment()  # loads them
    cached = CELParser.CEL_PARSER
    assert list(tmp_path.glob("cel/parser-*.lark"))
    assert _options(cached) == _options(own_parser)
    assert cached.source_grammar == own_parser.source_grammar
    program = env.program(env.compile("object.metadata.name.startsWith('gpu') && size(object.spec.x) == 2"))
    activation = {"object": celpy.json_to_cel({"metadata": {"name": "gpu01"}, "spec": {"x": [1, True]}})}
    assert program.evaluate(activation) == celpy.celtypes.BoolType(True)
