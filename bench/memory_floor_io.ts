/**
 * What any Deno operator's process does against an empty cluster, without the operator: a TLS
 * client that lists and then watches the kinds ours caches, and an HTTP server. The middle row
 * of `deno task bench:memory-floor`: Deno's own cost of that I/O. The modules named after the
 * kubeconfig are imported first (the libraries the operator cannot start without). Prints `ready`
 * once watching.
 *
 *   deno run <start's flags> bench/memory_floor_io.ts <kubeconfig in YAML's JSON form> [module…]
 */
for (const module of Deno.args.slice(1)) await import(module);
const kubeconfig = JSON.parse(await Deno.readTextFile(Deno.args[0]));
const server: string = kubeconfig.clusters[0].cluster.server;
const ca = atob(kubeconfig.clusters[0].cluster["certificate-authority-data"]);
const headers = { authorization: `Bearer ${kubeconfig.users[0].user.token}` };
const client = Deno.createHttpClient({ caCerts: [ca] });
/** The lists and watches the operator's informers make against an empty cluster. */
const PATHS = [
  "/apis/pt.example.com/v1alpha1/ptemplates",
  "/apis/kmm.sigs.x-k8s.io/v1beta1/modules",
  "/apis/apps/v1/daemonsets",
  "/api/v1/pods?labelSelector=pt.example.com%2Fptemplate-uid",
  "/api/v1/pods?labelSelector=kmm.node.kubernetes.io%2Fmodule.name",
  "/api/v1/nodes",
  "/api/v1/events?fieldSelector=involvedObject.kind%3DDaemonSet%2Creason%3DFailedCreate",
];
for (const path of PATHS) {
  const list = await (await fetch(`${server}${path}`, { client, headers })).json();
  const join = path.includes("?") ? "&" : "?";
  const watch =
    `${server}${path}${join}watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`;
  fetch(watch, { client, headers }).then(async (response) => {
    for await (const _ of response.body!) { /* events of an empty cluster: bookmarks */ }
  });
}
Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("ok"));
console.log("ready");
