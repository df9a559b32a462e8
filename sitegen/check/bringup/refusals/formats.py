"""The formats apimachinery validates names and labels against (Kubernetes v1.35,
k8s.io/apimachinery pkg/api/validate/content and pkg/util/validation), with their messages, and the
printing of a bad value by field.Error (pkg/util/validation/field), and the validation of labels and
label selectors (apis/meta/v1/validation). Helpers of validation.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sitegen.check.labels import label_selector_matches

# --- field.Error, as it prints ---------------------------------------------------------------------


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it: strings quoted (%q), numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value).lower() if isinstance(value, bool) else str(value)


def invalid(path: str, value: str, detail: str) -> str:
    return f"{path}: Invalid value: {value}: {detail}"


def go_map(labels: Mapping[str, Any] | None) -> str:
    """A map[string]string as %#v prints it (keys sorted)."""
    if labels is None:
        return "map[string]string(nil)"
    return (
        "map[string]string{"
        + ", ".join(f"{go_value(k)}:{go_value(str(v))}" for k, v in sorted(labels.items()))
        + "}"
    )


def selector_text(selector: Mapping[str, Any]) -> str:
    """A *metav1.LabelSelector as its generated String() prints it."""
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    exprs = "".join(
        f"&LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},Values:{list(e.get('values') or [])},}},"
        for e in selector.get("matchExpressions") or []
    )
    return f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"


# --- formats (apimachinery pkg/api/validate/content, pkg/util/validation) ------------------------------

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(f"^{_NAME_FMT}$")
_LABEL_VALUE = re.compile(f"^({_NAME_FMT})?$")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(f"^{_DNS_LABEL_FMT}$")
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN = re.compile(f"^{_DNS_SUBDOMAIN_FMT}$")
_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} bytes"


def dns_subdomain_errors(value: str) -> list[str]:
    errors = [_max_len(253)] if len(value) > 253 else []
    if not _DNS_SUBDOMAIN.match(value):
        errors.append(_regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character", _DNS_SUBDOMAIN_FMT, "example.com",
        ))  # fmt: skip
    return errors


def dns_label_errors(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value) > 63 else []
    if not _DNS_LABEL.match(value):
        errors.append("must not contain dots" if _DNS_SUBDOMAIN.match(value) else _regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            "start and end with an alphanumeric character", _DNS_LABEL_FMT, "my-name", "123-abc",
        ))  # fmt: skip
    return errors


def label_key_errors(key: str) -> list[str]:
    """content.IsLabelKey: [prefix/]name."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_KEY_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]  # fmt: skip
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        errors += (
            ["prefix part " + m for m in dns_subdomain_errors(prefix)]
            if prefix
            else ["prefix part must be non-empty"]
        )
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + _max_len(63))
    if not _NAME.match(name):
        errors.append("name part " + _regex_error(_KEY_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return errors


def label_value_errors(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        errors.append(_regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character", f"({_NAME_FMT})?", "MyValue", "my_value", "12345",
        ))  # fmt: skip
    return errors


def port_name_errors(name: str) -> list[str]:
    """IsValidPortName: an IANA_SVC_NAME (RFC 6335), lower case only."""
    errors = [_max_len(15)] if len(name) > 15 else []
    if not re.fullmatch(r"[-a-z0-9]+", name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def port_number_errors(value: Any, path: str) -> list[str]:
    if isinstance(value, int) and 1 <= value <= 65535:
        return []
    return [invalid(path, go_value(value), "must be between 1 and 65535, inclusive")]


# --- labels and selectors (apimachinery pkg/apis/meta/v1/validation) -----------------------------------


def labels_errors(labels: Mapping[str, Any] | None, path: str) -> list[str]:
    """ValidateLabels: every error names the map's path."""
    errors = []
    for key, value in (labels or {}).items():
        errors += [invalid(path, go_value(str(key)), m) for m in label_key_errors(str(key))]
        text = "" if value is None else str(value)
        errors += [invalid(path, go_value(text), m) for m in label_value_errors(text)]
    return errors


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def selector_errors(selector: Mapping[str, Any] | None, path: str) -> list[str]:
    """ValidateLabelSelector, invalid label values refused (as on create)."""
    if selector is None:
        return []
    errors = labels_errors(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        at, op, values = f"{path}.matchExpressions[{i}]", expr.get("operator"), list(expr.get("values") or [])
        if op in ("In", "NotIn") and not values:
            errors.append(
                f"{at}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
            )
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(
                f"{at}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        elif op not in _OPERATORS:
            errors.append(invalid(f"{at}.operator", go_value(op), "not a valid selector operator"))
        key = str(expr.get("key", ""))
        errors += [invalid(f"{at}.key", go_value(key), m) for m in label_key_errors(key)]
        for j, value in enumerate(values):
            errors += [
                invalid(f"{at}.values[{j}]", go_value(str(value)), m) for m in label_value_errors(str(value))
            ]
    return errors


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool | None:
    """LabelSelectorAsSelector(...).Matches: a nil selector matches nothing; None if it does not convert."""
    if selector is None:
        return False
    if any(
        e.get("operator") not in _OPERATORS or not e.get("key")
        for e in selector.get("matchExpressions") or []
    ):
        return None
    return label_selector_matches(selector, {k: str(v) for k, v in labels.items()})
