"""analysis.caught: which handlers around a call catch the error a rule predicts for it (FAB003/FAB004 stay
quiet about a mark the program expects to fail: public-code trial of Dec 7, third round, CRISP's builder)."""
import ast
import textwrap

import pytest

from fabric_lsp.analysis.caught import catching_handler


def _caught(code: str, error: str = "AttributeError") -> bool:
    tree = ast.parse(textwrap.dedent(code))
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "mark"]
    return catching_handler(tree, call, error) is not None


@pytest.mark.parametrize("handler", ["except AttributeError:", "except Exception:", "except:", "except BaseException:",
                                     "except (KeyError, AttributeError) as e:", "except builtins.AttributeError:"])
def test_handlers_that_catch(handler):
    assert _caught(f"try:\n    m.mark('x')\n{handler}\n    pass\n")


@pytest.mark.parametrize("code", [
    "try:\n    m.mark('x')\nexcept ValueError:\n    pass\n",  # another error
    "try:\n    m.mark('x')\nexcept AttributeError:\n    log()\n    raise\n",  # raised again
    "try:\n    m.mark('x')\nexcept AttributeError:\n    if strict:\n        raise\n",  # may be raised again
    "try:\n    pass\nexcept AttributeError:\n    m.mark('x')\n",  # in the handler, not the body
    "try:\n    pass\nexcept AttributeError:\n    pass\nelse:\n    m.mark('x')\n",
    "try:\n    pass\nfinally:\n    m.mark('x')\n",
    "try:\n    def later():\n        m.mark('x')\nexcept AttributeError:\n    pass\n",  # runs where it is called
    "try:\n    f = lambda: m.mark('x')\nexcept AttributeError:\n    pass\n",
    "m.mark('x')\n",
    "with open('f') as handle:\n    m.mark('x')\n",
    "with suppress(ValueError):\n    m.mark('x')\n",
])
def test_places_that_do_not_catch(code):
    assert not _caught(code)


def test_suppress_and_nesting():
    assert _caught("with contextlib.suppress(AttributeError):\n    m.mark('x')\n")
    assert _caught("with suppress(Exception), open('f'):\n    if ok:\n        m.mark('x')\n")
    # An inner `try` that does not catch it, inside an outer one that does.
    assert _caught("try:\n    try:\n        m.mark('x')\n    except ValueError:\n        pass\n"
                   "except AttributeError:\n    pass\n")
    # The first handler that matches is the one that runs: it raises again.
    assert not _caught("try:\n    m.mark('x')\nexcept AttributeError:\n    raise\nexcept Exception:\n    pass\n")
    # In a function defined inside the try, its own try counts.
    assert _caught("try:\n    def f():\n        try:\n            m.mark('x')\n        except Exception:\n            pass\n"
                   "except ValueError:\n    pass\n")
    assert _caught("try:\n    m.mark('x')\nexcept ValueError:\n    pass\n", "ValueError")
    assert not _caught("try:\n    m.mark('x')\nexcept AttributeError:\n    pass\n", "TypeError")
