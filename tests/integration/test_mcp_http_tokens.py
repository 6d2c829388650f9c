"""A bearer token file that someone besides its owner may write is refused.

Before, a world-writable token file was accepted without a word: anyone on the
machine could add a token of their own acting as any principal.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from docbinder.domain.errors import ConfigurationError
from docbinder.domain.model import Principal
from docbinder.integrations.mcp import BearerTokens, token_hash
from docbinder.integrations.mcp import tokens as tokens_module

TEXT = f'[[tokens]]\nsha256 = "{token_hash("t")}"\nuser = "alice"\nmandate = "acme"\n'


def _token_file(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(TEXT, encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("mode", "who"),
    [(0o666, "anyone"), (0o602, "anyone"), (0o620, "its group"), (0o664, "its group")],
)
def test_a_token_file_others_may_write_is_refused_in_one_line(
    tmp_path: Path, mode: int, who: str
) -> None:
    path = _token_file(tmp_path, mode)
    with pytest.raises(ConfigurationError) as refused:
        BearerTokens.load(path)
    message = str(refused.value)
    assert message == (
        f"refusing the bearer token file {path}: {who} may write it (mode {mode:04o}); "
        f"run chmod 600 {path}"
    )


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o644, 0o640])
def test_a_token_file_only_its_owner_may_write_is_read(tmp_path: Path, mode: int) -> None:
    tokens = BearerTokens.load(_token_file(tmp_path, mode))
    assert tokens.principals == (Principal("alice", "acme", None, roles=("member",)),)


def test_a_token_file_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _token_file(tmp_path, 0o600)
    owner = path.stat().st_uid
    if os.getuid() == 0:  # root can give the file away for real
        os.chown(path, 65534, -1)
        owner, user = 65534, 0
    else:  # otherwise the process pretends to be somebody else
        user = owner + 1
        monkeypatch.setattr(tokens_module.os, "getuid", lambda: user)
    with pytest.raises(ConfigurationError) as refused:
        BearerTokens.load(path)
    assert str(refused.value) == (
        f"refusing the bearer token file {path}: it belongs to uid {owner}, not to the user "
        f"running docbinder (uid {user}); run chown {user} {path} && chmod 600 {path}"
    )


def test_a_token_file_of_root_is_read_by_any_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _token_file(tmp_path, 0o644)
    if path.stat().st_uid != 0:
        pytest.skip("needs a file owned by root")
    monkeypatch.setattr(tokens_module.os, "getuid", lambda: 1000)
    assert len(BearerTokens.load(path).principals) == 1


@pytest.mark.parametrize(("mode", "refused"), [(0o777, True), (0o775, True), (0o1777, False)])
def test_a_token_file_in_a_directory_others_may_write_is_refused_unless_sticky(
    tmp_path: Path, mode: int, refused: bool
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = _token_file(folder, 0o600)
    folder.chmod(mode)
    if not refused:
        assert len(BearerTokens.load(path).principals) == 1
        return
    with pytest.raises(ConfigurationError) as raised:
        BearerTokens.load(path)
    assert str(raised.value).startswith(
        f"refusing the bearer token file {path}: "
        f"{'anyone' if mode & 0o002 else 'its group'} may replace it, its directory {folder} "
        f"is writable (mode {mode:04o}) without the sticky bit"
    )


def test_the_mode_is_checked_on_the_file_a_symlink_names(tmp_path: Path) -> None:
    target = _token_file(tmp_path, 0o666)
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    with pytest.raises(ConfigurationError, match=r"anyone may write it \(mode 0666\)"):
        BearerTokens.load(link)
    target.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert len(BearerTokens.load(link).principals) == 1


def test_the_cli_refuses_a_world_writable_token_file_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from docbinder.cli.main import app

    for key in [k for k in os.environ if k.startswith("DOCBINDER_")]:
        monkeypatch.delenv(key)
    path = _token_file(tmp_path, 0o666)
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    try:
        done = CliRunner().invoke(
            app,
            [
                "--home",
                str(tmp_path / "home"),
                "mcp",
                "--transport",
                "streamable-http",
                "--tokens",
                str(path),
            ],
        )
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
    assert done.exit_code == 1
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("error: refusing the bearer token file ")
    assert "chmod 600" in lines[0] and "tokens.toml" in lines[0]
