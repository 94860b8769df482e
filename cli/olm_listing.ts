/**
 * What OperatorHub shows of an operator in its bundle's CSV: its name, summary, description,
 * maintainers, icon and the examples (`alm-examples`) a user may start from.
 */
import { parseAllDocuments } from "yaml";
import { type OperatorIdentity, PTEMPLATE_OPERATOR } from "../runtime/mod.ts";

/** What OperatorHub shows of the operator: ours, written once; another's, from its identity. */
export interface Listing {
  displayName: string;
  /** One line (the CSV's description annotation). */
  summary: string;
  /** Markdown. */
  description: string;
  keywords: string[];
  maintainers: { name: string; email: string }[];
  repository?: string;
  /** An SVG, base64. */
  icon: string;
  /** `alm-examples`: objects a user may start from. */
  examples: unknown[];
}

/** An SVG badge with `text` on Kubernetes blue. */
function icon(text: string): string {
  return btoa(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" ' +
      'rx="12" fill="#326ce5"/><text x="32" y="42" font-size="28" text-anchor="middle" ' +
      `fill="#fff" font-family="sans-serif">${text}</text></svg>`,
  );
}

export function listingOf(operator: OperatorIdentity, examples: unknown[]): Listing {
  if (operator.name !== PTEMPLATE_OPERATOR.name) {
    const words = operator.name.split("-").map((w) => w.charAt(0).toUpperCase() + w.slice(1));
    return {
      displayName: words.join(" "),
      summary: operator.description,
      description: `${operator.description.charAt(0).toUpperCase()}${
        operator.description.slice(1)
      }, on the ptemplate-operator runtime.`,
      keywords: [operator.domain],
      maintainers: [{
        name: `${operator.name} maintainers`,
        email: `maintainers@${operator.domain}`,
      }],
      icon: icon(operator.name.slice(0, 2)),
      examples,
    };
  }
  const kmm = "Kernel Module Management (KMM)";
  return {
    displayName: "Ptemplate Operator",
    summary:
      "Loads a kernel module on selected nodes through KMM and runs the pods that use its devices.",
    description: [
      "A Ptemplate describes a character device on a set of nodes: the operator asks",
      `${kmm} to load the \`ptemplate_char_dev\` kernel module and its device plugin on the`,
      "nodes its selector matches, and runs a consumer DaemonSet whose pods use the devices.",
      "",
      `**${kmm} is optional.** Without KMM's \`modules.kmm.sigs.x-k8s.io\` API the operator`,
      "still runs the consumers and reports in each Ptemplate's status that KMM is missing;",
      "install KMM from OperatorHub for the kernel module to be loaded.",
    ].join("\n"),
    keywords: ["kernel module", "kmm", "device plugin", "character device"],
    maintainers: [{ name: "ptemplate-operator maintainers", email: "maintainers@ptemplate.dev" }],
    repository: "https://github.com/ptemplate/ptemplate-operator",
    icon: icon("pt"),
    examples,
  };
}

/**
 * The objects of every `*.yaml` file in `folder` (an own operator's `examples/`, which `new plugin`
 * writes a sample into), for `alm-examples`; none when there is no such folder.
 */
export async function readExamples(folder: string | URL): Promise<unknown[]> {
  const entries = await Array.fromAsync(Deno.readDir(folder)).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  });
  const base = folder instanceof URL ? folder.pathname : folder;
  const examples: unknown[] = [];
  for (const { name, isFile } of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!isFile || !name.endsWith(".yaml")) continue;
    const text = await Deno.readTextFile(`${base.replace(/\/$/, "")}/${name}`);
    examples.push(...parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean));
  }
  return examples;
}
