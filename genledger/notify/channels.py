"""Delivery channels, each enabled by an environment variable that also holds its secret.

The generic webhook and Slack are small `urllib` clients (exact JSON body, any URL, the HTTP
status is the delivery result); email goes through apprise (MIME, STARTTLS/SSL, login);
`GENLEDGER_APPRISE_URLS` reaches anything else apprise knows.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlencode

from genledger.config import NotifySettings
from genledger.notify import render
from genledger.notify.model import Message

ENV_WEBHOOK = "GENLEDGER_WEBHOOK_URL"
ENV_SLACK = "GENLEDGER_SLACK_WEBHOOK_URL"
ENV_APPRISE = "GENLEDGER_APPRISE_URLS"
ENV_UI_URL = "GENLEDGER_UI_URL"
ENV_SMTP = "GENLEDGER_SMTP_"
ENV_EMAIL_TO = "GENLEDGER_EMAIL_TO"
ENV_EMAIL_FROM = "GENLEDGER_EMAIL_FROM"
SECRET_ENV = (
    ENV_WEBHOOK,
    ENV_SLACK,
    ENV_APPRISE,
    "GENLEDGER_SMTP_USER",
    "GENLEDGER_SMTP_PASSWORD",
)
HTTP_TIMEOUT_S = 10.0
_SMTP_MODES = {"none": "insecure", "starttls": "starttls", "ssl": "ssl"}


class DeliveryError(RuntimeError):
    """A channel did not accept a message; the text names no secret."""


class Channel(Protocol):
    """Something a message can be delivered to."""

    name: str

    def send(self, message: Message) -> None:
        """Deliver or raise `DeliveryError` (or any exception)."""


@dataclass
class WebhookChannel:
    """POST the generic JSON body to a URL; any 2xx is a delivery."""

    url: str
    ui_url: str | None = None
    name: str = "webhook"

    def send(self, message: Message) -> None:
        """POST `render.json_body(message)`."""
        _post_json(self.url, render.json_body(message, self.ui_url))


@dataclass
class SlackChannel:
    """POST readable text to a Slack (or Slack-compatible) incoming webhook."""

    url: str
    ui_url: str | None = None
    name: str = "slack"

    def send(self, message: Message) -> None:
        """POST `{"text": ...}`."""
        _post_json(self.url, {"text": render.text(message, self.ui_url)})


@dataclass
class AppriseChannel:
    """Deliver through apprise to one or more apprise URLs (email, Teams, Discord, ntfy...)."""

    urls: tuple[str, ...]
    ui_url: str | None = None
    name: str = "apprise"

    def send(self, message: Message) -> None:
        """Notify every URL; any failure is a failed delivery for the whole channel."""
        import apprise  # imported lazily: loading its plugins costs ~0.5 s

        sender = apprise.Apprise()
        for url in self.urls:
            if not sender.add(url):
                raise DeliveryError(f"{self.name}: an apprise URL was not understood")
        result = sender.notify(title=render.title(message), body=render.text(message, self.ui_url))
        if not result:
            raise DeliveryError(f"{self.name}: apprise reported the delivery failed")


def _post_json(url: str, body: dict[str, object]) -> None:
    data = json.dumps(body, ensure_ascii=False).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        raise DeliveryError(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"connection failed: {type(reason).__name__}") from None
    if not 200 <= status < 300:
        raise DeliveryError(f"HTTP {status}")


def email_url(env: Mapping[str, str], settings: NotifySettings) -> str | None:
    """The apprise mailto URL built from GENLEDGER_SMTP_* (None when email is not set up)."""
    host = env.get(ENV_SMTP + "HOST", "").strip()
    to = _split(env.get(ENV_EMAIL_TO, "")) or list(settings.email_to)
    if not host or not to:
        return None
    tls = env.get(ENV_SMTP + "TLS", "starttls").strip().lower() or "starttls"
    if tls not in _SMTP_MODES:
        raise ValueError(f"{ENV_SMTP}TLS must be one of none, starttls, ssl (got {tls!r})")
    port = env.get(ENV_SMTP + "PORT", "").strip() or {"none": "25", "starttls": "587"}.get(
        tls, "465"
    )
    user, password = env.get(ENV_SMTP + "USER", ""), env.get(ENV_SMTP + "PASSWORD", "")
    login = f"{quote(user, safe='')}:{quote(password, safe='')}@" if user else ""
    query = {
        "mode": _SMTP_MODES[tls],
        "smtp": host,
        "from": env.get(ENV_EMAIL_FROM, "").strip() or settings.email_from,
        "to": ",".join(to),
        "format": "text",
        "cto": "5",  # connect timeout: a dead server must not eat the sensor tick
        "rto": "10",
    }
    scheme = "mailto" if tls == "none" else "mailtos"
    return f"{scheme}://{login}{host}:{int(port)}/?{urlencode(query)}"


def channels_from_env(
    env: Mapping[str, str], settings: NotifySettings, problems: list[str] | None = None
) -> list[Channel]:
    """The channels the environment enables, in a fixed order; misconfigured ones go to problems."""
    ui_url = env.get(ENV_UI_URL, "").strip() or None
    found: list[Channel] = []
    if env.get(ENV_WEBHOOK, "").strip():
        found.append(WebhookChannel(env[ENV_WEBHOOK].strip(), ui_url))
    if env.get(ENV_SLACK, "").strip():
        found.append(SlackChannel(env[ENV_SLACK].strip(), ui_url))
    try:
        mail = email_url(env, settings)
    except ValueError as exc:
        mail = None
        if problems is not None:
            problems.append(f"email disabled: {exc}")
    if mail:
        found.append(AppriseChannel((mail,), ui_url, name="email"))
    extra = tuple(_split_urls(env.get(ENV_APPRISE, "")))
    if extra:
        found.append(AppriseChannel(extra, ui_url))
    return found


def secrets_from_env(env: Mapping[str, str]) -> list[str]:
    """Every value that must never be written anywhere, URL-encoded forms included."""
    values: list[str] = []
    for name in SECRET_ENV:
        for value in [env.get(name, "").strip(), *_split_urls(env.get(name, ""))]:
            if value:
                values.extend({value, quote(value, safe="")})
    return values


def _split(value: str) -> list[str]:
    """Addresses separated by commas, semicolons or spaces."""
    return [part for part in value.replace(";", " ").replace(",", " ").split() if part]


def _split_urls(value: str) -> list[str]:
    """URLs separated by whitespace (a URL may itself hold commas)."""
    return value.split()
