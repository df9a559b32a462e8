"""Command line: `sitegen synth` (the main job), `charts`, `doctor`, `plan`, `validate`, `apps`, `diff`, `rules`.

The top of the pipeline: it loads the model, hands it to composition, checks and reports, and turns
every known failure (sitegen.errors.SiteError) into `error:` lines and exit code 2, in one place
(`SiteGroup`); anything else is a bug and ends as a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

# `constructs/` at the repo root joins the jsii `constructs` namespace package only when the repo
# root is importable; the console script runs from anywhere, so put it on the path here.
_REPO = Path(__file__).resolve().parent.parent
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from sitegen.cache import prune  # noqa: E402
from sitegen.errors import Refused, SiteError  # noqa: E402
from sitegen.model import ConfigError, ConfigFault, Site, dotted, load_site  # noqa: E402

if TYPE_CHECKING:
    from sitegen.check.bringup import Result

CONFIG_OPTION = click.option(
    "--config",
    "config_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("config"),
    envvar="SITEGEN_CONFIG",
    show_default="$SITEGEN_CONFIG or config",
    help="Config directory (site, pools, networks, clusters, variants, storage, versions).",
)


DIST_OPTION = click.option(
    "--dist",
    "dist_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("dist"),
    envvar="SITEGEN_DIST",
    show_default="$SITEGEN_DIST or dist",
    help="Synthesized tree to read (every variant in it).",
)


DOCS_OPTION = click.option(
    "--docs",
    "docs_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("docs"),
    show_default=True,
    help="Pages whose generated blocks show the site's figures.",
)


def _require_dirs(*paths: Path) -> None:
    for path in paths:
        if not path.is_dir():
            raise Refused(f"{path}: directory does not exist")


def _progress():  # type: ignore[no-untyped-def]
    """A one-line counter of chart renders on a terminal (a cold synth takes a while); none in CI."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return None

    def show(done: int, total: int, app: str) -> None:
        end = "\n" if done == total else ""
        click.echo(f"\rrendering charts {done}/{total} ({app})\x1b[K", err=True, nl=False)
        click.echo(end, err=True, nl=False)

    return show


def _load(config_dir: Path) -> Site:
    from sitegen.compose.apps import pin_needs

    return load_site(config_dir, pin_needs())


class SiteGroup(click.Group):
    """Every command's known failures, printed one `error:` line each, exit 2."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except SiteError as fault:
            for line in fault.lines():
                click.echo(f"error: {line}", err=True)
            ctx.exit(2)


@click.group(cls=SiteGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sitegen", message="%(prog)s %(version)s")
def cli() -> None:
    """GitOps generator for one bare-metal AI/HPC site: config/ in, dist/ out."""


@cli.command()
@CONFIG_OPTION
@click.option(
    "--variant",
    "variants",
    multiple=True,
    help="Variant to synthesize (repeatable). Default: every variant in variants.yaml.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=lambda: os.environ.get("CDK8S_OUTDIR", "dist"),
    show_default="$CDK8S_OUTDIR or dist",
    help="Output directory; replaced atomically (only the chosen variants' folders with --variant).",
)
@click.option(
    "--show-moves",
    is_flag=True,
    help="Write nothing; print, as gitops.yaml acknowledged_moves entries, every live address or name "
    "the change would move.",
)
def synth(config_dir: Path, variants: tuple[str, ...], out_dir: Path, show_moves: bool) -> None:
    """Synthesize manifests, Helm values and kubeadm files into dist/<variant>/."""
    from sitegen.compose import fingerprint

    key = fingerprint.fingerprint(config_dir, sorted(variants) or None) if config_dir.is_dir() else None
    count = fingerprint.unchanged(key, out_dir, list(variants) or None) if key and not show_moves else None
    if count is not None:
        click.echo(f"synthesized {count} files into {out_dir} (unchanged: same inputs as the last synth)")
        return
    site = _load(config_dir)
    for variant in variants:
        if variant not in site.variants:
            known = ", ".join(site.variants)
            raise Refused(f"{config_dir / 'variants.yaml'}: unknown variant {variant!r} (known: {known})")
    from sitegen.compose.variant import synthesize
    from sitegen.compose.writer import render_tree, write_tree

    chosen = list(variants) or list(site.variants)
    from sitegen.compose.growth import check_growth
    from sitegen.compose.live_addresses import check_moves, moves

    try:
        rendered = render_tree(synthesize(site, chosen, progress=_progress()))
        if not variants:  # the whole site: its picture too, and what it was made of
            from sitegen.report.picture import PICTURE, site_svg

            rendered[PICTURE] = site_svg(site).encode()
            if key:
                rendered[fingerprint.INPUTS] = fingerprint.inputs_file(key)
        check_growth(site, rendered, out_dir, whole_site=not variants)  # against the dist/ the site runs
        if show_moves:
            for move in moves(rendered, out_dir):
                click.echo(f"  - '{move}'")
            return
        check_moves(site, rendered, out_dir)
    except ConfigError as fault:  # a rule that needs the composed site (tenant names, Service count)
        section, *field = fault.loc
        raise ConfigFault(config_dir / f"{section}.yaml", dotted(tuple(field)), fault.message) from fault
    changed = write_tree(rendered, out_dir, chosen if variants else None)
    if key:
        fingerprint.remember(key, out_dir, {p.as_posix(): data for p, data in rendered.items()})
    prune()
    state = "" if changed else " (unchanged)"
    click.echo(f"synthesized {len(rendered)} files for {', '.join(chosen)} into {out_dir}{state}")


@cli.command()
@CONFIG_OPTION
@click.option(
    "--renew",
    is_flag=True,
    help="Fetch and vendor the named charts (default: every chart whose pin the lock does not hold), "
    "rewriting their charts.lock entries.",
)
@click.option(
    "--mirror",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --renew: a directory of packaged charts (a Helm repository folder) to take them from, "
    "instead of their upstream repositories.",
)
@click.option(
    "--origin", help="With --renew: where the archives came from, for the lock (default: the source)."
)
@click.argument("keys", nargs=-1)
def charts(
    config_dir: Path, renew: bool, mirror: Path | None, origin: str | None, keys: tuple[str, ...]
) -> None:
    """Check the vendored chart archives (vendor/charts/) against charts.lock and config/versions.yaml;
    with --renew, vendor the pinned archives of KEYS (versions.yaml chart keys) from their source."""
    from sitegen.compose.chart_supply import ChartStore, shown
    from sitegen.compose.variant import chart_keys

    site = _load(config_dir)
    pins = site.versions.chart_pins(chart_keys(site, list(site.variants)))
    unknown = sorted(set(keys) - set(pins))
    if unknown:
        raise Refused(f"{config_dir / 'versions.yaml'}: charts.{unknown[0]}: no component renders it")
    if (mirror or origin) and not renew:
        raise Refused("--mirror and --origin go with --renew")
    store = ChartStore()
    if renew:
        wanted = list(keys) or store.outdated(pins)
        renewed = store.renew(pins, [k for k in wanted if k in pins], mirror, origin)
        click.echo(f"renewed {', '.join(renewed)}" if renewed else "every vendored chart is the pinned one")
    store.supply(pins)
    strays = store.strays()
    if strays:
        raise Refused(f"{shown(strays[0])}: no charts.lock entry names it")
    click.echo(f"{len(pins)} charts vendored in vendor/charts/, all as charts.lock holds them")


@cli.command()
@CONFIG_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def plan(config_dir: Path, fmt: str) -> None:
    """Print capacity and fabric figures per pool and for the site."""
    from sitegen.report.plan import plan_json, render_plan

    site = _load(config_dir)
    click.echo(plan_json(site) if fmt == "json" else render_plan(site), nl=False)


@cli.command()
@CONFIG_OPTION
@DIST_OPTION
@click.option(
    "--crds",
    "crd_dirs",
    type=click.Path(path_type=Path, file_okay=False),
    multiple=True,
    help="Extra CRD directory (repeatable). Not needed: the CRDs rendered into the tree are read anyway, "
    "and kinds registered at run time have typed stand-ins.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def validate(config_dir: Path, dist_dir: Path, crd_dirs: tuple[Path, ...], fmt: str) -> None:
    """Check every document offline: schemas (core strict, CRDs, host configs) and policy rules."""
    sys.exit(_validate(_load(config_dir), dist_dir, list(crd_dirs), fmt))


def _validate(site: Site, dist_dir: Path, crd_dirs: list[Path], fmt: str = "text") -> int:
    _require_dirs(dist_dir, *crd_dirs)
    from sitegen.check.validate import validate_tree

    report = validate_tree(dist_dir, site, crd_dirs)
    if fmt == "json":
        click.echo(report.as_json())
        return 1 if report.findings else 0
    for finding in report.findings:
        click.echo(str(finding))
    click.echo(report.summary())
    return 1 if report.findings else 0


@cli.command()
@CONFIG_OPTION
@DIST_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def apps(config_dir: Path, dist_dir: Path, fmt: str) -> None:
    """List every Application (expanding any ApplicationSet) and print the inventory; exit 1 on a broken app."""
    site = _load(config_dir)
    _require_dirs(dist_dir)
    from sitegen.report.inventory import inventory

    table, problems = inventory(dist_dir, site, as_json=fmt == "json")
    click.echo(table)
    for problem in problems:
        click.echo(problem, err=fmt == "json")
    sys.exit(1 if problems else 0)


@cli.command()
@DIST_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def flows(dist_dir: Path, fmt: str) -> None:
    """List the flows the network policies allow, per variant, cluster and namespace (beside each
    namespace's default deny): egress destinations and ingress sources, with ports where limited."""
    _require_dirs(dist_dir)
    from sitegen.report.flows import render_flows

    click.echo(render_flows(dist_dir, as_json=fmt == "json"), nl=False)


@cli.command()
@DIST_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def projects(dist_dir: Path, fmt: str) -> None:
    """List which Argo CD project may create cluster-scoped RBAC and the objects of its apps that need
    it, for review (rule APP-005 refuses a kind no app of the project renders)."""
    _require_dirs(dist_dir)
    from sitegen.report.projects import render_projects

    click.echo(render_projects(dist_dir, as_json=fmt == "json"), nl=False)


@cli.command()
@CONFIG_OPTION
@DIST_OPTION
@click.option("--variant", "variants", multiple=True, help="Variant to bring up (repeatable). Default: all.")
def bringup(config_dir: Path, dist_dir: Path, variants: tuple[str, ...]) -> None:
    """Simulate each variant's first install offline, from bare hosts to every Application Healthy:
    the RUNBOOK's commands, then Argo CD's waves. Prints a timeline per cluster; exit 1 naming the
    first blocker."""
    site = _load(config_dir)
    _require_dirs(dist_dir)
    from sitegen.check.bringup import timeline

    results = _simulate(site, dist_dir, list(variants or site.variants))
    for result in results:
        click.echo(timeline(result))
    sys.exit(0 if all(r.ok for r in results) else 1)


def _simulate(site: Site, dist_dir: Path, variants: list[str]) -> list[Result]:
    """Each variant's bring-up from `dist_dir` (exit 2 naming a variant that is not synthesized)."""
    from sitegen.check.bringup import bring_up_dist

    for variant in variants:
        if not (dist_dir / variant).is_dir():
            raise Refused(f"{dist_dir / variant}: not synthesized; run `make synth`")
    return bring_up_dist(site, dist_dir, variants)


@cli.command()
@CONFIG_OPTION
@DOCS_OPTION
@click.option("--check", "check_only", is_flag=True, help="Write nothing; exit 1 naming each stale page.")
def docs(config_dir: Path, docs_dir: Path, check_only: bool) -> None:
    """Rewrite the generated blocks of docs/ (the component table, the storage map) from config/."""
    sys.exit(_docs(_load(config_dir), docs_dir, check_only))


def _docs(site: Site, docs_dir: Path, check_only: bool) -> int:
    from sitegen.report import docs as generated

    _require_dirs(docs_dir)
    pages = generated.stale(docs_dir, site) if check_only else generated.refresh(docs_dir, site)
    for page in pages:
        state = "are stale: run `make synth`" if check_only else "rewritten"
        click.echo(f"{'error: ' if check_only else ''}{page}: generated blocks {state}", err=check_only)
    return 1 if check_only and pages else 0


@cli.command()
@CONFIG_OPTION
@DIST_OPTION
@DOCS_OPTION
def check(config_dir: Path, dist_dir: Path, docs_dir: Path) -> None:
    """The site's own checks, stopping at the first that fails: config/ loads (every error, exit 2),
    dist/ and the generated blocks of docs/ are what it synthesizes (run make synth), validate, bringup.
    `make site` adds the scan."""
    from sitegen.compose import fingerprint

    site = _load(config_dir)
    _require_dirs(dist_dir)
    if fingerprint.recorded(dist_dir) != fingerprint.fingerprint(config_dir, None):
        raise Refused(
            f"{dist_dir / fingerprint.INPUTS}: {dist_dir}/ is stale: {config_dir}/ or the generator "
            "changed since the last synth; run `make synth` and commit dist/"
        )
    for step in (lambda: _docs(site, docs_dir, check_only=True), lambda: _validate(site, dist_dir, [])):
        code = step()
        if code:
            sys.exit(code)
    from sitegen.check.bringup import timeline

    for result in _simulate(site, dist_dir, list(site.variants)):
        if not result.ok:  # the whole timeline: what came up before the blocker tells where to look
            click.echo(timeline(result))
            sys.exit(1)
        click.echo(
            f"bring-up of {result.variant}: every Application Healthy (sitegen bringup prints the timeline)"
        )


@cli.command()
@DIST_OPTION
@click.option(
    "--exceptions",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path(".ci/scanner/exceptions.yaml"),
    show_default=True,
    help="The reviewed exceptions: check, objects, reason.",
)
@click.option(
    "--checkov",
    type=click.Path(path_type=Path, dir_okay=False),
    default=lambda: os.environ.get("SITEGEN_CHECKOV", ".venv-scan/bin/checkov"),
    show_default="$SITEGEN_CHECKOV or .venv-scan/bin/checkov",
)
def scan(dist_dir: Path, exceptions: Path, checkov: Path) -> None:
    """Run checkov over every object of dist/ and judge its findings against the reviewed exceptions;
    exit 1 on a finding no exception covers, or an exception that covers nothing any more."""
    _require_dirs(dist_dir)
    from sitegen.report.scan import ScanError, judge, load_exceptions, render, run_checkov

    try:
        entries = load_exceptions(exceptions)
        verdict = judge(run_checkov(checkov.resolve(), dist_dir), entries)
    except OSError as fault:  # the exceptions file or the scanner: not there, not readable
        raise ScanError(str(fault)) from fault
    click.echo(render(verdict, entries, str(exceptions)))
    sys.exit(0 if verdict.ok else 1)


@cli.command()
@click.argument("base", default="origin/main")
@click.argument("head", required=False)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True
)
@click.option(
    "--dist", "dist", default=str(Path("dist")), show_default=True, help="dist/ inside the repository."
)
@click.option(
    "--max-bytes",
    type=int,
    help="Markdown within this size (a pull request comment): whole rows and folds, then what is left out.",
)
@click.option("--more", default="", help="With --max-bytes: where the whole report is (a link).")
def diff(base: str, head: str | None, fmt: str, dist: str, max_bytes: int | None, more: str) -> None:
    """What changes in the clusters from BASE to HEAD (git revisions; no HEAD: the working tree):
    objects added, removed and changed per variant, cluster and app, with their changed fields."""
    from sitegen.report.diff import compare, repository_root
    from sitegen.report.diff_render import coloured, render_json, render_markdown, render_text

    groups = compare(repository_root(Path.cwd()), base, head, dist)
    if fmt == "markdown":
        text = render_markdown(groups, max_bytes, more)
    else:
        text = (render_json if fmt == "json" else render_text)(groups)
    if fmt == "text" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        text = coloured(text)
    click.echo(text, nl=False)


@cli.command()
@CONFIG_OPTION
def doctor(config_dir: Path) -> None:
    """Check Python, Node, the cdk8s CLI, Helm and the vendored charts; say what fixes each."""
    from sitegen.report.doctor import checks, render

    results = checks(_load(config_dir))
    click.echo(render(results), nl=False)
    sys.exit(0 if all(c.ok for c in results) else 1)


@cli.command()
@CONFIG_OPTION
def rules(config_dir: Path) -> None:
    """List the policy rules with their rationale, then the allow-lists the components declare."""
    site = _load(config_dir)
    from sitegen.check.allowlists import allow_lists
    from sitegen.check.rules import RULES
    from sitegen.report.table import table, wrapped_prose

    for line in table(
        ["rule", "name", "why"], [[r.id, r.name, r.rationale] for r in sorted(RULES, key=lambda r: r.id)]
    ):
        click.echo(line)
    click.echo()
    for line in wrapped_prose(allow_lists(site).lines()):
        click.echo(line)


@cli.command()
@CONFIG_OPTION
def components(config_dir: Path) -> None:
    """Print the component table (Markdown): every registered component and where it runs."""
    from sitegen.report.components import component_table

    click.echo(component_table(_load(config_dir)), nl=False)


def main(args: list[str] | None = None) -> None:
    """The console script and main.py: one process per command, so it may keep its cdk8s calls on one
    CPU (before cdk8s starts Node; see compose.tools.converse_on_one_cpu)."""
    from sitegen.compose.tools import converse_on_one_cpu

    converse_on_one_cpu()
    cli(args)
