import re

from ruamel.yaml import YAML

from tests.conftest import ROOT


def test_openapi_documents_every_api_route_and_nothing_else(app):
    spec = YAML(typ="safe", pure=True).load((ROOT / "docs/openapi.yaml").read_text())
    documented = {(path, method.upper()) for path, item in spec["paths"].items()
                  for method in item if method != "parameters"}
    from deniable.server import ingest

    routes = [(rule.rule, rule.methods - {"HEAD", "OPTIONS"}) for rule in app.url_map.iter_rules()]
    routes.append((ingest.ROUTE[0], {ingest.ROUTE[1]}))  # answered beneath Flask
    served = set()
    for rule, methods in routes:
        if rule.startswith("/api/v1/"):
            path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule[len("/api/v1"):])
            served |= {(path, m) for m in methods}
    assert documented == served


def test_api_doc_mentions_every_route():
    text = (ROOT / "docs/api.md").read_text()
    spec = YAML(typ="safe", pure=True).load((ROOT / "docs/openapi.yaml").read_text())
    for path in spec["paths"]:
        assert path in text, path
