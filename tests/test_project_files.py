"""The host-side file actions with hostile paths: nothing outside the project folder is read, written or listed."""

import os

import pytest

from rlm_host.environments.project_files import MAX_WRITE_BYTES, PathRefused
from rlm_host.environments.project_files import ProjectFiles


@pytest.fixture
def tree(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "qa.py").write_text("import dspy\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    return ProjectFiles(project), project, secret


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "..", "./../secret.txt", "a/..\\..\\x"])
def test_parent_components_are_refused(tree, path):
    workspace, _, _ = tree
    with pytest.raises(PathRefused, match=r"'\.\.' is not allowed"):
        workspace.read_lines(path)
    with pytest.raises(PathRefused):
        workspace.write_text(path, "x")


def test_absolute_paths_outside_are_refused_and_inside_ones_allowed(tree):
    workspace, project, secret = tree
    for path in (str(secret), "/etc/passwd", "/"):
        with pytest.raises(PathRefused, match="outside the project folder"):
            workspace.read_lines(path)
    assert "import dspy" in workspace.read_lines(str(project / "qa.py"))["content"]


def test_symlinks_leading_out_are_refused_for_read_write_and_patch(tree):
    workspace, project, secret = tree
    (project / "link.txt").symlink_to(secret)
    (project / "outdir").symlink_to(secret.parent)
    for action in (lambda p: workspace.read_lines(p), lambda p: workspace.write_text(p, "pwned"),
                   lambda p: workspace.patch(p, "host", "pwned")):
        for path in ("link.txt", "outdir/secret.txt", "outdir/new.py"):
            with pytest.raises(PathRefused, match="outside the project folder"):
                action(path)
    assert secret.read_text() == "host secret" and not (secret.parent / "new.py").exists()


def test_a_symlink_inside_the_folder_is_refused_at_open_even_when_it_stays_inside(tree):
    """The final component is opened without following links: a link swapped in after the check cannot redirect."""
    workspace, project, _ = tree
    (project / "alias.py").symlink_to(project / "qa.py")
    with pytest.raises(PathRefused):
        workspace._open(project / "alias.py")


def test_devices_fifos_and_folders_are_not_files(tree):
    workspace, project, _ = tree
    os.mkfifo(project / "pipe")
    with pytest.raises(PathRefused, match="not a regular file"):
        workspace.read_lines("pipe")  # would block forever with a plain open
    with pytest.raises(PathRefused):  # no reader: the non-blocking open itself fails (ENXIO), never hangs
        workspace.write_text("pipe", "x")
    (project / "null").symlink_to("/dev/null")
    with pytest.raises(PathRefused):
        workspace.write_text("null", "x")
    with pytest.raises(PathRefused, match="folder"):
        workspace.write_text(".", "x")


def test_writes_are_size_limited_and_nul_is_refused(tree):
    workspace, project, _ = tree
    with pytest.raises(PathRefused, match="limit"):
        workspace.write_text("big.py", "x" * (MAX_WRITE_BYTES + 1))
    with pytest.raises(PathRefused, match="NUL"):
        workspace.write_text("a\x00b.py", "x")
    assert not (project / "big.py").exists()


def test_write_patch_read_and_list_inside_the_folder(tree):
    workspace, project, _ = tree
    assert workspace.write_text("pkg/mod.py", "A = 1\nB = 2\n") == {"path": "pkg/mod.py", "bytes": 12, "created": True}
    assert workspace.patch("pkg/mod.py", "B = 2", "B = 3")["mode"] == "search_replace"
    assert (project / "pkg" / "mod.py").read_text() == "A = 1\nB = 3\n"
    with pytest.raises(PathRefused, match="occurs 0 times"):
        workspace.patch("pkg/mod.py", "C = 1", "C = 2")
    assert workspace.read_lines("pkg/mod.py", 2, 2)["content"] == "    2  B = 3"
    listing = workspace.list_tree(".", 3)
    assert listing["entries"] == ["pkg/", "pkg/mod.py", "qa.py"]
    assert workspace.python_files() == ["pkg/mod.py", "qa.py"]


def test_list_tree_does_not_follow_symlinked_folders(tree):
    workspace, project, secret = tree
    (project / "outdir").symlink_to(secret.parent)
    assert "outdir/secret.txt" not in workspace.list_tree(".", 4)["entries"]
    with pytest.raises(PathRefused, match="outside"):
        workspace.list_tree("outdir")


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".envrc", "a/.envrc",
                                  ".hg/hgrc", ".svn/entries", ".jj/repo/config.toml", ".GIT/config",
                                  ".rlm/runs/x.jsonl"])
def test_version_control_and_tool_metadata_is_read_only(tree, path):
    workspace, project, _ = tree
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    with pytest.raises(PathRefused, match="metadata, read-only"):
        workspace.write_text(path, "[core]\n\tfsmonitor = touch /tmp/pwned\n")
    with pytest.raises(PathRefused, match="metadata, read-only"):
        workspace.patch(path, content="x")
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not (project / path).exists() or path.lower().startswith(".git/config")


def test_a_link_to_metadata_is_read_only_too(tree):
    workspace, project, _ = tree
    (project / ".git").mkdir()
    (project / "innocent").symlink_to(project / ".git")
    with pytest.raises(PathRefused, match="metadata"):
        workspace.write_text("innocent/config", "x")


def test_writes_never_follow_a_folder_swapped_for_a_link_after_the_check(tree, monkeypatch):
    """Code in the sandbox swaps a checked folder for a symlink to the outside between the check and the write:
    the write walks the folders one at a time without following links, so nothing is created outside."""
    workspace, project, secret = tree
    (project / "pkg").mkdir()
    real_resolve = ProjectFiles.resolve

    def resolve_then_swap(self, raw):
        path = real_resolve(self, raw)
        (project / "pkg").rmdir()
        (project / "pkg").symlink_to(secret.parent)  # the race, made certain
        return path

    monkeypatch.setattr(ProjectFiles, "resolve", resolve_then_swap)
    with pytest.raises(PathRefused, match="without following links"):
        workspace.write_text("pkg/evil.py", "pwned")
    assert not (secret.parent / "evil.py").exists()


def test_reads_never_follow_a_folder_swapped_for_a_link_after_the_check(tree, monkeypatch):
    """The same race for a read: a checked folder swapped for a symlink to the outside (where a file of the same name
    holds a secret) between the check and the open. The walk refuses the link; the secret is never returned."""
    workspace, project, secret = tree
    (project / "pkg").mkdir()
    (project / "pkg" / "secret.txt").write_text("inside")
    real_resolve = ProjectFiles.resolve

    def resolve_then_swap(self, raw):
        path = real_resolve(self, raw)
        (project / "pkg" / "secret.txt").unlink()
        (project / "pkg").rmdir()
        (project / "pkg").symlink_to(secret.parent)  # pkg/secret.txt now names the host's secret
        return path

    monkeypatch.setattr(ProjectFiles, "resolve", resolve_then_swap)
    with pytest.raises(PathRefused):
        workspace.read_text("pkg/secret.txt")
