import { expect } from "expect";
import { CRD_SOURCES, crdFileName, renderCrd } from "./generated_crds.ts";

Deno.test("the committed CRD YAML matches its TypeScript source (run `deno task crds` if not)", async () => {
  for (const source of CRD_SOURCES) {
    const file = new URL(crdFileName(source.crd), import.meta.url);
    const committed = await Deno.readTextFile(file).catch(() => "(missing)");
    expect({ file: file.pathname, upToDate: committed === renderCrd(source) })
      .toEqual({ file: file.pathname, upToDate: true });
  }
});
