/**
 * `new <dir>`: a new operator's GitHub workflows: CI (its checks and tests, which render its
 * deploy and validate its bundle) on every push, and a release from a version tag that builds its
 * binaries, image and OLM bundle, refusing a tag that is not deno.json's version.
 */
import type { CrdFile } from "./crd_files.ts";

/** The workflows of the operator `name`, with Deno pinned as ours is. */
export function workflowFiles(name: string, denoVersion: string): CrdFile[] {
  const setup = `      - uses: actions/setup-node@v4
        with: { node-version: 20 }
      - name: Deno, pinned, from npm
        run: npm install -g deno@\${DENO_VERSION}`;
  return [
    {
      path: ".github/workflows/ci.yml",
      text:
        `# ${name}'s checks and tests on every push and pull request: types, format, lint, then every
# test (the integration tests start a real control plane, built with Go the first time; deploy_test
# renders deploy/ and validates the OLM bundle).
name: ci

on:
  push:
  pull_request:

env:
  DENO_VERSION: ${denoVersion}

jobs:
  test:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
${setup}
      - uses: actions/setup-go@v5
        with: { go-version: "1.26" }
      - run: deno task check
      - run: deno task test
        env: { CI: "true" }
`,
    },
    {
      path: ".github/workflows/release.yml",
      text:
        `# Releases a version tag (v1.2.3): refuses a tag that is not deno.json's version, tests, builds
# the binaries, pushes the image (version and latest), writes the OLM bundle naming the image by its
# digest, and publishes the binaries with their checksums.
name: release

on:
  push:
    tags: ["v*"]

permissions:
  contents: write
  packages: write

env:
  DENO_VERSION: ${denoVersion}

jobs:
  test:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - name: The tag is deno.json's version
        run: |
          version=$(jq -r .version deno.json)
          if [ "\${GITHUB_REF_NAME}" != "v\${version}" ]; then
            echo "tag \${GITHUB_REF_NAME} is not deno.json's version v\${version}" >&2
            exit 1
          fi
${setup}
      - uses: actions/setup-go@v5
        with: { go-version: "1.26" }
      - run: deno task check
      - run: deno task test
        env: { CI: "true" }

  binaries:
    needs: test
    strategy:
      matrix:
        include:
          - { target: x86_64-unknown-linux-gnu, name: linux-x64 }
          - { target: aarch64-unknown-linux-gnu, name: linux-arm64 }
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
${setup}
      - name: Compile with the compile task's permissions
        run: |
          command=$(deno eval --quiet 'console.log(JSON.parse(Deno.readTextFileSync("deno.json")).tasks.compile.command)')
          eval "\${command% main.ts} --target \${{ matrix.target }} main.ts"
          mv dist/${name} dist/${name}-\${{ matrix.name }}
      - uses: actions/upload-artifact@v4
        with:
          name: ${name}-\${{ matrix.name }}
          path: dist/${name}-\${{ matrix.name }}

  image:
    needs: test
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - name: Image name (registries want it lower-case)
        run: echo "IMAGE=ghcr.io/\${GITHUB_REPOSITORY_OWNER,,}/${name}" >> "$GITHUB_ENV"
      - uses: docker/setup-qemu-action@v3
      - uses: docker/setup-buildx-action@v3
      - uses: docker/login-action@v3
        with:
          registry: ghcr.io
          username: \${{ github.actor }}
          password: \${{ secrets.GITHUB_TOKEN }}
      - uses: docker/build-push-action@v6
        id: build
        with:
          context: .
          file: Containerfile
          platforms: linux/amd64,linux/arm64
          push: true
          tags: |
            \${{ env.IMAGE }}:\${{ github.ref_name }}
            \${{ env.IMAGE }}:latest
${setup}
      - name: OLM bundle naming the image by digest, checked by the scorecard
        run: |
          deno task bundle --version "\${GITHUB_REF_NAME#v}" \\
            --image "\${IMAGE}@\${{ steps.build.outputs.digest }}" \\
            --bundle-image "\${IMAGE}-bundle:\${GITHUB_REF_NAME}"
          deno task start scorecard --bundle bundle
      - uses: docker/build-push-action@v6
        with:
          context: .
          file: bundle.Dockerfile
          push: true
          tags: \${{ env.IMAGE }}-bundle:\${{ github.ref_name }}

  publish:
    needs: [binaries, image]
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/download-artifact@v4
        with: { path: dist, merge-multiple: true }
      - name: Checksums
        working-directory: dist
        run: sha256sum ${name}-* > SHA256SUMS
      - uses: softprops/action-gh-release@v2
        with:
          files: |
            dist/${name}-*
            dist/SHA256SUMS
`,
    },
  ];
}
