"""synth's writer: an edit that changes one file writes that file; every other file of the new tree is
the old one linked in (never rewritten, never changed in place), and the swap stays atomic."""

from __future__ import annotations

from pathlib import PurePosixPath

from sitegen.compose.writer import write_tree


def test_an_edit_writes_only_what_changed(tmp_path):
    out = tmp_path / "dist"
    tree = {PurePosixPath("v/apps/ai/a.yaml"): b"a: 1\n", PurePosixPath("v/apps/ai/b.yaml"): b"b: 1\n"}
    assert write_tree(tree, out, None)
    kept_before, changed_before = (out / "v/apps/ai/a.yaml").stat(), (out / "v/apps/ai/b.yaml").stat()
    held = (out / "v/apps/ai/b.yaml").open("rb")  # a reader of the old tree, mid-read
    assert not write_tree(tree, out, None)  # the same bytes: nothing written, nothing swapped

    edited = {**tree, PurePosixPath("v/apps/ai/b.yaml"): b"b: 2\n"}
    assert write_tree(edited, out, None)
    assert (out / "v/apps/ai/a.yaml").stat().st_ino == kept_before.st_ino  # linked, not written
    assert (out / "v/apps/ai/b.yaml").stat().st_ino != changed_before.st_ino
    assert (out / "v/apps/ai/b.yaml").read_bytes() == b"b: 2\n"
    assert held.read() == b"b: 1\n"  # the old file was replaced, not changed in place
    held.close()


def test_a_removed_file_goes_and_a_variant_alone_is_replaced(tmp_path):
    out = tmp_path / "dist"
    write_tree({PurePosixPath("v/x.yaml"): b"x\n", PurePosixPath("w/y.yaml"): b"y\n"}, out, None)
    assert write_tree({PurePosixPath("v/z.yaml"): b"z\n"}, out, ["v"])
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml")) == ["v/z.yaml", "w/y.yaml"]
