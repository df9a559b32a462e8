"""`dig`: an optional field of an object read back, as the API server reads one."""

from __future__ import annotations

import pytest

from sitegen.tree.fields import dig

APP = {"spec": {"syncPolicy": {"retry": {"limit": 0}, "automated": None}, "source": {}}}


def test_a_present_field_is_read_whatever_its_value():
    assert dig(APP, "spec", "syncPolicy", "retry", "limit", default=5) == 0  # falsy, but set
    assert dig(APP, "spec", "source", default="x") == {}


@pytest.mark.parametrize(
    "keys",
    [
        ("spec", "syncPolicy", "backoff", "limit"),  # a step missing
        ("spec", "syncPolicy", "automated", "prune"),  # a step null
        ("spec", "source", "directory", "recurse"),  # a step empty
        ("status", "health"),  # the first step missing
    ],
)
def test_a_missing_null_or_empty_step_gives_the_default(keys):
    assert dig(APP, *keys) is None
    assert dig(APP, *keys, default=3) == 3


def test_a_null_object_has_no_fields():
    assert dig(None, "spec", default=[]) == []


def test_a_step_that_is_not_a_mapping_is_a_malformed_object():
    with pytest.raises(TypeError, match="'limit' read from a list"):
        dig({"spec": {"retry": ["x"]}}, "spec", "retry", "limit")
