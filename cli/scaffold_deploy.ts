/**
 * `new <dir>`: what takes a new operator onto a cluster, named after it: its kustomize base
 * (`deploy/`: namespace, ServiceAccount, Deployment, metrics Service and NetworkPolicy, and the RBAC
 * that `deno task crds` generates into `deploy/rbac/`), the `deploy/monitoring` overlay for
 * prometheus-operator, and the Containerfile that builds its image with its compile task.
 */
import { posix } from "node:path";
import type { OperatorIdentity } from "../runtime/mod.ts";
import type { CrdFile } from "./crd_files.ts";
import { metricsRoles } from "./rbac_manifests.ts";
import { DENO_VERSION } from "./version.ts";

/** The folders `kubectl apply -k` takes: the base, and each overlay over it. */
export const DEPLOY_FOLDERS = ["deploy", "deploy/monitoring"] as const;

/** deploy/ and the Containerfile of `operator`, whose import map names the runtime `runtime`. */
export function deployFiles(operator: OperatorIdentity, runtime: string): CrdFile[] {
  const { name, namespace } = operator;
  const labels = `labels:\n  - pairs:\n      app.kubernetes.io/name: ${name}\n`;
  const reader = metricsRoles(operator).reader;
  return [
    {
      path: "deploy/kustomization.yaml",
      text:
        `# ${name}'s kustomize base, watching every namespace: \`kubectl kustomize deploy\` renders it,
# \`kubectl apply -k deploy\` installs it. Its CRDs come apart (\`deno task install\`, or crds/*.yaml),
# so that deleting this base never deletes anyone's objects. Its image: \`kustomize edit set image\`.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
${labels}resources:
  - core
  - rbac
images:
  - name: ${name}
    newName: ${operator.image}
    # deno.json's version: its release's image (deploy_test.ts checks that they agree).
    newTag: v${operator.version}
`,
    },
    {
      path: "deploy/core/kustomization.yaml",
      text: `# What every install of ${name} has: its namespace, ServiceAccount, Deployment, metrics
# Service (HTTPS, callers checked with the API server), the ClusterRole a Prometheus is given to read
# it, and the NetworkPolicy that keeps everyone else out.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ${namespace}
resources:
  - namespace.yaml
  - service_account.yaml
  - deployment.yaml
  - metrics_service.yaml
  - metrics_reader_role.yaml
  - network_policy.yaml
`,
    },
    {
      path: "deploy/core/namespace.yaml",
      text: `apiVersion: v1
kind: Namespace
metadata:
  name: ${namespace}
  labels:
    pod-security.kubernetes.io/enforce: restricted
`,
    },
    {
      path: "deploy/core/service_account.yaml",
      text: `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n`,
    },
    { path: "deploy/core/deployment.yaml", text: deployment(name, namespace) },
    {
      path: "deploy/core/metrics_service.yaml",
      text: `# /metrics over HTTPS (deploy/monitoring has a ServiceMonitor for it).
apiVersion: v1
kind: Service
metadata:
  name: ${name}-metrics
  labels:
    app.kubernetes.io/component: metrics
spec:
  selector:
    app.kubernetes.io/name: ${name}
  ports:
    - name: metrics
      port: 8443
      targetPort: metrics
`,
    },
    {
      path: "deploy/core/metrics_reader_role.yaml",
      text:
        `# What a Prometheus needs to scrape ${name}: bind its ServiceAccount to this ClusterRole.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${reader}
rules:
  - nonResourceURLs: [/metrics]
    verbs: [get]
`,
    },
    {
      path: "deploy/core/network_policy.yaml",
      text:
        `# /metrics from the monitoring namespace only (change it if your Prometheus runs elsewhere);
# the kubelet's probes need no rule.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: ${name}-metrics
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: ${name}
  policyTypes: [Ingress]
  ingress:
    - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: monitoring
      ports:
        - port: metrics
          protocol: TCP
`,
    },
    {
      path: "deploy/rbac/kustomization.yaml",
      text:
        `# ${name}'s RBAC and leader fence: rbac.yaml is generated from catalog.ts by \`deno task crds\`
# (what \`deno task rbac\` prints); its namespaced objects name ${namespace} themselves.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - rbac.yaml
`,
    },
    {
      path: "deploy/monitoring/kustomization.yaml",
      text:
        `# The base with what prometheus-operator needs: a ServiceMonitor for the metrics Service, and the
# metrics-reader ClusterRole bound to kube-prometheus's Prometheus (monitoring/prometheus-k8s; change
# it to yours). Needs prometheus-operator's CRDs. \`kubectl apply -k deploy/monitoring\`
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
${labels}resources:
  # deploy/, by its parts: kustomize refuses an ancestor folder.
  - ../core
  - ../rbac
  - service_monitor.yaml
  - prometheus_role_binding.yaml
images:
  - name: ${name}
    newName: ${operator.image}
    newTag: v${operator.version}
`,
    },
    {
      path: "deploy/monitoring/service_monitor.yaml",
      text:
        `# Prometheus scrapes /metrics over HTTPS with its own ServiceAccount token, which ${name} checks
# with the API server; its certificate is self-signed unless given one (--metrics-cert-dir).
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
      app.kubernetes.io/component: metrics
  endpoints:
    - port: metrics
      scheme: https
      path: /metrics
      bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
      tlsConfig:
        insecureSkipVerify: true
`,
    },
    {
      path: "deploy/monitoring/prometheus_role_binding.yaml",
      text:
        `# Lets kube-prometheus's Prometheus read /metrics; name your Prometheus's ServiceAccount here.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ${reader}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ${reader}
subjects:
  - kind: ServiceAccount
    name: prometheus-k8s
    namespace: monitoring
`,
    },
    { path: "Containerfile", text: containerfile(name, runtime) },
    { path: ".dockerignore", text: "dist/\nbundle/\ncatalog/\n.git/\n" },
  ];
}

function deployment(name: string, namespace: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
spec:
  # Two replicas with leader election: a standby takes over within a lease (15 s) if the leader's
  # node dies, and within about 2 s when it is stopped normally.
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ${name}
    spec:
      serviceAccountName: ${name}
      # Longer than the operator's 30 s drain, so in-flight reconciles finish before SIGKILL.
      terminationGracePeriodSeconds: 40
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: operator
          image: ${name}
          args:
            - run
            - --leader-elect
            - --leader-election-namespace=${namespace}
            # HTTPS, only for callers the API server says may get /metrics.
            - --metrics-bind-address=:8443
            - --metrics-secure
            - --health-probe-bind-address=:8081
            - --log-format=json
          env:
            # The leader-election identity's prefix: the leader fence (deploy/rbac) refuses the
            # writes of a pod that does not hold the Lease.
            - name: POD_NAME
              valueFrom:
                fieldRef: { fieldPath: metadata.name }
          ports:
            - name: metrics
              containerPort: 8443
            - name: probes
              containerPort: 8081
          livenessProbe:
            httpGet: { path: /healthz, port: probes }
            initialDelaySeconds: 5
            periodSeconds: 10
          readinessProbe:
            httpGet: { path: /readyz, port: probes }
            periodSeconds: 5
          resources:
            requests: { cpu: 50m, memory: 64Mi }
            limits: { cpu: 500m, memory: 256Mi }
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities:
              drop: [ALL]
`;
}

/** Where the image build puts this operator's folder. */
const BUILD_DIR = "/build/src/operator";

/**
 * The image: the compile task on the build machine, for the image's platform, then the binary on
 * distroless. A runtime imported from a folder comes in as the build context `runtime`, copied to
 * where the import map finds it from the build folder; one imported from a URL is fetched.
 */
function containerfile(name: string, runtime: string): string {
  const local = !/^https?:\/\//.test(runtime);
  const runtimeDir = local ? posix.resolve(BUILD_DIR, runtime) : undefined;
  const build = local
    ? `#   docker buildx build --build-context runtime=${
      runtime.replace(/\/$/, "")
    } -f Containerfile -t ${name} .\n# (the runtime is imported from a folder: it comes in as the build context "runtime")`
    : `#   docker buildx build -f Containerfile -t ${name} .`;
  return `# ${name}'s image: \`deno compile\` on the build machine's platform, for the image's target
# platform, then the single binary on distroless (glibc, no shell, runs as nonroot).
${build}
ARG DENO_VERSION=${DENO_VERSION}

FROM --platform=$BUILDPLATFORM denoland/deno:\${DENO_VERSION} AS build
ARG TARGETARCH
WORKDIR ${BUILD_DIR}
${local ? `COPY --from=runtime . ${runtimeDir}\n` : ""}COPY . .
# The permission flags come from the compile task in deno.json, so image and binary match.
RUN case "$TARGETARCH" in \\
      amd64) target=x86_64-unknown-linux-gnu ;; \\
      arm64) target=aarch64-unknown-linux-gnu ;; \\
      *) echo "unsupported architecture $TARGETARCH" >&2; exit 1 ;; \\
    esac \\
 && command=$(deno eval --quiet 'console.log(JSON.parse(Deno.readTextFileSync("deno.json")).tasks.compile.command)') \\
 && sh -c "\${command% main.ts} --target $target main.ts"

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build ${BUILD_DIR}/dist/${name} /${name}
USER 65532:65532
ENV GLIBC_TUNABLES=glibc.malloc.arena_max=2
EXPOSE 8443 8081
ENTRYPOINT ["/${name}"]
CMD ["run"]
`;
}
