"""`toolsift serve openai --config FILE.toml`: the file sets defaults, flags override it, a
mistake in it is one line (exit 2) before any port is taken."""
from __future__ import annotations

from tests.support.cli import toolsift


def test_the_file_sets_defaults_and_flags_override_it(tmp_path):
    cfg = tmp_path / "toolsift.toml"
    cfg.write_text('[serve]\nk = 7\ndb = "%s"\n[serve.openai]\nupstream = "http://127.0.0.1:9/v1"\n'
                   'on-hallucination = "bogus"\n' % (tmp_path / "nope.db"), encoding="utf-8")
    from_file = toolsift("serve", "openai", "--config", cfg)
    assert from_file.returncode == 2 and "Traceback" not in from_file.stderr
    assert from_file.stderr.strip() == "error: --on-hallucination must be one of annotate, repair, reject, got 'bogus'"
    overridden = toolsift("serve", "openai", "--config", cfg, "--on-hallucination", "annotate")
    assert overridden.returncode == 2  # the flag won; the next setting from the file is the missing catalog
    assert overridden.stderr.strip() == f"error: {tmp_path / 'nope.db'}: no such catalog (build one with `toolsift catalog add`)"
    via_env = toolsift("serve", "openai", env={"TOOLSIFT_CONFIG": str(cfg)})
    assert via_env.stderr == from_file.stderr


def test_unknown_settings_and_bad_files_are_one_line(tmp_path):
    typo = tmp_path / "typo.toml"
    typo.write_text("[serve]\non_halucination = 'repair'\n", encoding="utf-8")
    res = toolsift("serve", "openai", "--config", typo, "--upstream", "http://127.0.0.1:9")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "unknown setting 'on_halucination' for serve openai" in res.stderr and "on-hallucination" in res.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("[serve\n", encoding="utf-8")
    res = toolsift("serve", "anthropic", "--config", broken)
    assert res.returncode == 2 and res.stderr.startswith(f"error: {broken}: not a TOML file")
    res = toolsift("serve", "openai", "--config", tmp_path / "absent.toml", "--upstream", "http://x")
    assert res.returncode == 2 and "absent.toml: cannot read" in res.stderr
