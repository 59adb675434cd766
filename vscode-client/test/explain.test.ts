import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { explainMarkdown, explainQuery } from "../src/explain";

describe("explainMarkdown", () => {
  it("reads the server's answer object", () => {
    const answer = { code: "FAB001", record: "af391673c4dd180e", markdown: "### FAB001\n\ntext", plaintext: "FAB001 text" };
    assert.equal(explainMarkdown(answer), "### FAB001\n\ntext");
  });

  it("accepts a plain string and MarkupContent", () => {
    assert.equal(explainMarkdown("**x**"), "**x**");
    assert.equal(explainMarkdown({ kind: "markdown", value: "*y*" }), "*y*");
  });

  it("joins several records", () => {
    assert.equal(explainMarkdown([{ markdown: "a" }, { markdown: "b" }]), "a\n\n---\n\nb");
  });

  it("returns undefined when nothing matched", () => {
    assert.equal(explainMarkdown(null), undefined);
    assert.equal(explainMarkdown(undefined), undefined);
    assert.equal(explainMarkdown(""), undefined);
    assert.equal(explainMarkdown({ rechecked: 1 }), undefined);
  });
});

describe("explainQuery", () => {
  it("upper-cases a bare rule code and keeps messages as typed", () => {
    assert.equal(explainQuery(" fab002 "), "FAB002");
    assert.equal(
      explainQuery("  TypeError: Expected a method or a string, but got: function "),
      "TypeError: Expected a method or a string, but got: function",
    );
  });
});
