"""The issuing CA's expiry, checked daily: cert-manager signs leaves that outlive their CA and tracks
only the leaves' expiry (its CA issuer docs: "You'll need to track the expiry of all certificates in
the chain"), so nothing else says that the intermediate the RUNBOOK made, or the site CA above it, is
about to take every certificate of the site with it.

A CronJob reads the chain of the issuing CA's Secret (its certificates only: the key is not mounted)
and fails while any certificate of it expires within WARN_DAYS; the site alerts turn a failed run into
an alert. The image's busybox does the reading: base64, od and awk walk each certificate's DER down
to its validity (Certificate, TBSCertificate, version, serial, signature algorithm, issuer, then
validity's notBefore and notAfter), UTCTime or GeneralizedTime (RFC 5280 4.1.2.5).
"""

from __future__ import annotations

from constructs import Construct
from constructs.objects import cron_job, script_pod
from sitegen.model import ImagePin, Placement

NAME = "issuing-ca-expiry"
SCHEDULE = "17 5 * * *"
# A leaf's own renewal comes at most 60 days after its issue (two thirds of cert-manager's default 90
# days): a CA renewed that early sees every leaf move over to it before it ends.
WARN_DAYS = 60
MOUNT = "/etc/issuing-ca"
CHAIN = "tls.crt"

# reads CHAIN (PEM certificates) and WARN_DAYS; prints when each certificate of the chain ends, and
# exits 1 when one ends within WARN_DAYS
EXPIRY_SCRIPT = r"""set -eu
tmp="${TMPDIR:-/tmp}"
limit=$(date -u -d "@$(( $(date -u +%s) + WARN_DAYS * 86400 ))" +%Y%m%d%H%M%S)
awk -v dir="$tmp" '/-----BEGIN CERTIFICATE-----/ { n++; out = dir "/cert" n ".pem"; next }
  /-----END CERTIFICATE-----/ { out = ""; next }
  out != "" { print > out }' "$CHAIN"
late=0; seen=0
for pem in "$tmp"/cert*.pem; do
  [ -e "$pem" ] || break
  seen=$((seen + 1))
  ends=$(base64 -d "$pem" | od -An -v -tu1 | awk '
    function len(   b, n, i) {  # the length at p (short or long form); p moves past it
      b = h[p++]; if (b < 128) return b
      n = 0; for (i = 0; i < b - 128; i++) n = n * 256 + h[p++]; return n }
    function skip() { p++; p += len() }  # an element whose tag is at p
    function enter() { p++; len() }  # into a constructed element whose tag is at p
    function text(n,   s, i) { s = ""; for (i = 0; i < n; i++) s = s sprintf("%c", h[p + i]); return s }
    { for (i = 1; i <= NF; i++) h[m++] = $i + 0 }
    END {
      p = 0; enter(); enter()                 # Certificate, TBSCertificate
      if (h[p] == 160) skip()                 # [0] version
      skip(); skip(); skip()                  # serialNumber, signature, issuer
      enter(); skip()                         # validity, notBefore
      tag = h[p++]; n = len(); t = text(n)   # notAfter
      if (tag == 23) t = (substr(t, 1, 2) < 50 ? "20" : "19") t  # UTCTime: YY
      print substr(t, 1, 14) }')
  echo "certificate $seen of the chain ends $ends (UTC, YYYYMMDDhhmmss)"
  if [ "$(printf '%s\n%s\n' "$ends" "$limit" | sort | head -n 1)" = "$ends" ]; then
    echo "certificate $seen of the chain ends within $WARN_DAYS days: renew the issuing CA (RUNBOOK)" >&2
    late=$((late + 1))
  fi
done
[ "$seen" -gt 0 ] || { echo "no certificate in $CHAIN" >&2; exit 1; }
[ "$late" -eq 0 ]
"""


class CaExpiryCheck(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        secret: str,
        image: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        # the certificates only: the CA's key stays out of the pod
        chain = {"secret": {"secretName": secret, "items": [{"key": CHAIN, "path": CHAIN}]}}
        pod = script_pod(
            "check", image.ref, EXPIRY_SCRIPT, {"CHAIN": f"{MOUNT}/{CHAIN}", "WARN_DAYS": str(WARN_DAYS)},
            placement, volumes={"chain": chain}, mounts={"chain": MOUNT},
        )  # fmt: skip
        cron_job(
            self,
            "Schedule",
            {"name": NAME, "namespace": namespace},
            schedule=SCHEDULE,
            job={"backoffLimit": 0, "template": {"spec": pod}},
        )
