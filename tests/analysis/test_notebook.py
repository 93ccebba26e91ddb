import nbformat
from nbclient import NotebookClient

from tests.conftest import ROOT


def test_quickstart_notebook_runs(tmp_path):
    notebook = nbformat.read(ROOT / "docs/notebooks/quickstart.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "true share who dodged" in text and "Comparison(dodged='yes'" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)
