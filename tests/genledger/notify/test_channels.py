"""Channel configuration from the environment, and redaction."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from genledger.config import NotifySettings
from genledger.notify.channels import channels_from_env, email_url, secrets_from_env
from genledger.notify.redact import MASK, redact


def test_no_environment_means_no_channels_but_the_local_log() -> None:
    assert channels_from_env({}, NotifySettings()) == []


def test_the_email_url_follows_the_smtp_variables_and_quotes_the_password() -> None:
    env = {
        "GENLEDGER_SMTP_HOST": "smtp.example.com",
        "GENLEDGER_SMTP_TLS": "ssl",
        "GENLEDGER_SMTP_USER": "bot@example.com",
        "GENLEDGER_SMTP_PASSWORD": "p@ss/word?&",
        "GENLEDGER_EMAIL_TO": "a@example.com, b@example.com",
    }
    url = email_url(env, NotifySettings())
    assert url is not None
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert (parts.scheme, parts.hostname, parts.port) == ("mailtos", "smtp.example.com", 465)
    assert query["mode"] == ["ssl"] and query["to"] == ["a@example.com,b@example.com"]
    assert query["from"] == [NotifySettings().email_from]
    assert "p@ss/word?&" not in url
    starttls = urlsplit(
        email_url({**env, "GENLEDGER_SMTP_TLS": "starttls"}, NotifySettings()) or ""
    )
    assert (starttls.port, parse_qs(starttls.query)["mode"]) == (587, ["starttls"])


def test_a_bad_tls_setting_disables_email_only_and_says_why() -> None:
    env = {
        "GENLEDGER_WEBHOOK_URL": "http://127.0.0.1:9/hook",
        "GENLEDGER_SMTP_HOST": "127.0.0.1",
        "GENLEDGER_SMTP_TLS": "tls1.3",
        "GENLEDGER_EMAIL_TO": "ops@example.com",
    }
    problems: list[str] = []
    channels = channels_from_env(env, NotifySettings(), problems)
    assert [c.name for c in channels] == ["webhook"]
    assert len(problems) == 1 and "GENLEDGER_SMTP_TLS" in problems[0]


def test_redaction_masks_known_secrets_and_urls_in_errors() -> None:
    env = {"GENLEDGER_SMTP_PASSWORD": "hunter22", "GENLEDGER_SLACK_WEBHOOK_URL": "https://h/x/T0K"}
    secrets = secrets_from_env(env)
    text = "login hunter22 failed; POST https://h/x/T0K and http://other/tok?k=v refused"
    masked = redact(text, secrets)
    assert "hunter22" not in masked and "T0K" not in masked and "tok?k=v" not in masked
    assert masked.count(MASK) == 3
    assert redact("see http://ui/assets/a", secrets, urls=False) == "see http://ui/assets/a"
