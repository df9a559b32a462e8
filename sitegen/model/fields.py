"""Field types and the base model every config file's models share, and the one config error.

A rule that spans files raises `ConfigError` with the absolute location (file section, field path), so
the loader can name the file and the field in one line.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict

Loc = tuple[str | int, ...]


class ConfigError(Exception):
    """One impossible or malformed value, located by (file section, field path...)."""

    def __init__(self, loc: Loc, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
EXACT_VERSION = re.compile(r"^v?\d+(\.\d+){1,3}([-+][0-9A-Za-z.+-]+)?$")
_IMAGE_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def _dns_label(value: str) -> str:
    if not _DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a DNS label (lowercase letters, digits and '-', at most 63)")
    return value


def _dns_name(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueError(f"{value!r} is not a DNS name")
    return value


def _label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise ValueError(f"label key {key!r}: prefix {prefix!r} is not a DNS subdomain")
    if not _LABEL_NAME.match(name):
        raise ValueError(
            f"label key {key!r}: name {name!r} must be 1-63 alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    return key


def _label_value(value: str) -> str:
    if value and not _LABEL_NAME.match(value):
        raise ValueError(
            f"label value {value!r} must be empty or 1-63 alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    return value


def _exact_version(value: str) -> str:
    if not EXACT_VERSION.match(value):
        raise ValueError(f"{value!r} is not an exact version (ranges, 'latest' and empty are refused)")
    return value


def _image_tag(value: str) -> str:
    if value == "latest" or not _IMAGE_TAG.match(value):
        raise ValueError(f"{value!r} is not a pinned image tag ('latest' and empty are refused)")
    return value


def _text(value: object) -> object:
    # pydantic would take an integer (or `true`) as an address; in config that is always a mistake.
    if not isinstance(value, str):
        raise ValueError(f"expected an address or CIDR as text, got {type(value).__name__}")
    return value


def _network_text(value: object) -> object:
    """A CIDR with host bits set (10.20.0.1/22) names the network it meant: say which."""
    value = _text(value)
    try:
        ipaddress.IPv4Network(value)
    except ValueError:
        try:
            meant = ipaddress.IPv4Interface(value).network
        except ValueError:
            return value  # pydantic says what is wrong with it
        raise ValueError(f"{value} has host bits set: the network is {meant}") from None
    return value


# Models are strict (no `true` as 1, no "8" as 8, no 8.0 as 8); addresses are parsed from their text.
Cidr = Annotated[ipaddress.IPv4Network, BeforeValidator(_network_text), Strict(False)]
Address = Annotated[ipaddress.IPv4Address, BeforeValidator(_text), Strict(False)]
DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
BucketName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
ExactVersion = Annotated[str, AfterValidator(_exact_version)]
ImageTag = Annotated[str, AfterValidator(_image_tag)]
RailName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,8}$")]
HttpsUrl = Annotated[str, Field(pattern=r"^https://\S+$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def dotted(loc: Loc) -> str:
    """('pools', 'gpu', 'hosts', 3, 'name') -> 'pools.gpu.hosts[3].name'"""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for "the key itself is invalid"
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _PLAIN_KEY.match(part):
            out += f"[{part!r}]"
        else:
            out += f".{part}" if out else part
    return out


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_./-]+$")
