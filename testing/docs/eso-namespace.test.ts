import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_POLICY } from '@eso-mtls/core';
import { CONTROLLER_FLAGS } from '../../packages/controller/src/index.js';
import { STATUS_FLAGS } from '../../packages/controller/src/status/options.js';

// One ESO namespace (issue 23 item 2): the README's Helm command installed into
// `external-secrets` while deploy/, the controller and `eso-mtls status` use
// `external-secrets-system`, so status looked in the wrong namespace after the README's install.
// Every Helm command of the docs, charts and examples names the namespace the controller defaults
// to (or a placeholder), and so does every namespace that looks like ESO's: after a `--namespace`,
// `-n`, `--eso-namespace`, `namespace:`, in a SPIFFE ID's `/ns/` or a `NS=` variable. ESO's
// ServiceAccount `external-secrets` is not a namespace and is left alone.

const root = fileURLToPath(new URL('../../', import.meta.url));
const ESO_NAMESPACE = DEFAULT_POLICY.esoNamespace;

/** Every file a reader follows: Markdown and NOTES anywhere but node_modules/dist, and deploy/'s YAML (comments included). */
function documents(dir = root): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (['node_modules', 'dist', '.git', '.eso-mtls-dev'].includes(entry.name)) continue;
    const path = join(dir, entry.name);
    const rel = relative(root, path);
    if (entry.isDirectory()) found.push(...documents(path));
    else if (/\.(md|txt)$/.test(entry.name) || (rel.startsWith('deploy/') && /\.ya?ml$/.test(entry.name))) found.push(rel);
  }
  return found.sort();
}

/** A value that stands for the reader's own namespace rather than naming one. */
const isPlaceholder = (value: string): boolean => /^[<$"'{]/.test(value);

/** The text's lines with shell continuations (`\` at the end) joined, numbered as in the file. */
function logicalLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let joined = lines[i]!;
    while (joined.endsWith('\\') && i + 1 < lines.length) joined = `${joined.slice(0, -1)} ${lines[++i]!.trim()}`;
    out.push({ line: start + 1, text: joined });
  }
  return out;
}

interface Mention {
  readonly where: string;
  readonly namespace: string;
}

/** The namespace of every Helm command (`helm install|upgrade|uninstall|...` with `--namespace`/`-n`). */
function helmNamespaces(file: string, text: string): Mention[] {
  const found: Mention[] = [];
  for (const { line, text: l } of logicalLines(text)) {
    for (const command of l.matchAll(/\bhelm (?:install|upgrade|uninstall|template|status|history|rollback|get \w+)\b[^`|;&]*/g)) {
      for (const m of command[0].matchAll(/(?:--namespace|-n)[= ]+(\S+)/g)) found.push({ where: `${file}:${line}`, namespace: m[1]! });
    }
  }
  return found;
}

/** Every value in a namespace position that looks like ESO's namespace (`external-secrets...`). */
function esoNamespaceMentions(file: string, text: string): Mention[] {
  const positions = [
    /(?:--namespace|--eso-namespace|(?<![\w-])-n)[= ]+["']?(external-secrets[a-z0-9-]*)/g,
    /\bnamespace: *["']?(external-secrets[a-z0-9-]*)/g,
    /\/ns\/(external-secrets[a-z0-9-]*)\//g,
    /\b(?:ESO_)?(?:NS|NAMESPACE)=["']?(external-secrets[a-z0-9-]*)/g,
  ];
  const found: Mention[] = [];
  for (const { line, text: l } of logicalLines(text)) {
    for (const re of positions) for (const m of l.matchAll(re)) found.push({ where: `${file}:${line}`, namespace: m[1]! });
  }
  return found;
}

describe(`ESO's namespace in the docs, the chart and the examples is the controller's default, ${ESO_NAMESPACE}`, () => {
  const files = documents();
  const texts = new Map(files.map((f) => [f, readFileSync(join(root, f), 'utf8')]));

  it("is the default of the controller's --namespace and of status's --eso-namespace", () => {
    expect(CONTROLLER_FLAGS.find((f) => f.name === 'namespace')!.default).toBe(ESO_NAMESPACE);
    expect(STATUS_FLAGS.find((f) => f.name === 'eso-namespace')!.help).toContain(`(default ${ESO_NAMESPACE})`);
  });

  it('installs, upgrades and uninstalls with Helm in that namespace, in every command of the README, the chart README and the docs', () => {
    const mentions = files.flatMap((f) => helmNamespaces(f, texts.get(f)!));
    // The extraction is not silently empty: the README's install and the chart README's install, upgrade and uninstall.
    const inReadmes = mentions.filter((m) => m.where.startsWith('README.md:') || m.where.startsWith('deploy/helm/eso-mtls/README.md:'));
    expect(inReadmes.length).toBeGreaterThanOrEqual(5);
    const named = mentions.filter((m) => !isPlaceholder(m.namespace));
    expect(named.filter((m) => m.namespace !== ESO_NAMESPACE)).toEqual([]);
  });

  it('names no other ESO-like namespace anywhere: flags, namespace: fields, SPIFFE IDs, NS= variables', () => {
    const mentions = files.flatMap((f) => esoNamespaceMentions(f, texts.get(f)!));
    expect(mentions.length).toBeGreaterThanOrEqual(10);
    expect(mentions.filter((m) => m.namespace !== ESO_NAMESPACE)).toEqual([]);
  });

  it('reads the chart README, NOTES.txt, docs/metrics.md, deploy/README.md and the examples', () => {
    for (const f of ['README.md', 'deploy/README.md', 'deploy/helm/eso-mtls/README.md', 'deploy/helm/eso-mtls/templates/NOTES.txt', 'docs/metrics.md']) {
      expect(files).toContain(f);
    }
    expect(files.filter((f) => f.startsWith('examples/') || f.startsWith('deploy/examples/')).length).toBeGreaterThanOrEqual(3);
    expect(files).toContain('deploy/helm/eso-mtls/values.yaml');
  });
});
