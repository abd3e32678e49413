"""Test support code shared by several test packages (scripted OpenAI-compatible upstream)."""
