/**
 * Mutations of DER for the fuzz suites: structure-aware ones (edit one element of the parsed tree
 * and re-encode every length around it, so the result still parses as far as the edit allows) and
 * raw ones (flip, overwrite, insert, delete, truncate bytes). A mutation is plain data, so
 * fast-check shrinks a failing case to the few edits that matter.
 */
import fc from 'fast-check';
import { DerError, children, contentsOf, readElement, tlv } from '../../src/x509/der.js';

/** One element of a DER tree: constructed elements keep their children, the others their contents. */
interface DerNode {
  readonly tag: number;
  readonly contents: Uint8Array | readonly DerNode[];
}

/** One edit of a DER encoding; `at` picks the element or byte (modulo their count). */
export type DerMutation =
  | { readonly kind: 'contents'; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: 'flip'; readonly at: number; readonly offset: number; readonly mask: number }
  | { readonly kind: 'tag'; readonly at: number; readonly tag: number }
  | { readonly kind: 'append'; readonly at: number; readonly element: Uint8Array }
  | { readonly kind: 'remove'; readonly at: number; readonly child: number }
  | { readonly kind: 'duplicate'; readonly at: number; readonly child: number }
  | { readonly kind: 'swap'; readonly at: number; readonly child: number }
  | { readonly kind: 'raw-flip'; readonly at: number; readonly mask: number }
  | { readonly kind: 'raw-set'; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: 'raw-insert'; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: 'raw-delete'; readonly at: number; readonly length: number }
  | { readonly kind: 'truncate'; readonly at: number };

const isConstructed = (tag: number): boolean => (tag & 0x20) !== 0;

function parseNode(der: Uint8Array, offset: number, limit: number): DerNode {
  const e = readElement(der, offset, limit);
  if (!isConstructed(e.tag)) return { tag: e.tag, contents: contentsOf(der, e) };
  return { tag: e.tag, contents: children(der, e).map((c) => parseNode(der, c.start, e.end)) };
}

function encodeNode(node: DerNode): Uint8Array {
  return node.contents instanceof Uint8Array ? tlv(node.tag, node.contents) : tlv(node.tag, ...node.contents.map(encodeNode));
}

/** Every node of the tree, depth first, root first. */
function nodesOf(root: DerNode): DerNode[] {
  const out: DerNode[] = [root];
  if (!(root.contents instanceof Uint8Array)) for (const c of root.contents) out.push(...nodesOf(c));
  return out;
}

/** The tree with `target` replaced by `replacement` (nodes are compared by identity). */
function replace(root: DerNode, target: DerNode, replacement: DerNode): DerNode {
  if (root === target) return replacement;
  if (root.contents instanceof Uint8Array) return root;
  return { tag: root.tag, contents: root.contents.map((c) => replace(c, target, replacement)) };
}

function editNode(node: DerNode, m: DerMutation): DerNode {
  const list = node.contents instanceof Uint8Array ? undefined : node.contents;
  const pick = (i: number): number => (list && list.length > 0 ? i % list.length : 0);
  switch (m.kind) {
    case 'contents':
      return { tag: node.tag, contents: m.bytes };
    case 'flip': {
      if (list) return node;
      const bytes = Uint8Array.from(node.contents as Uint8Array);
      if (bytes.length > 0) bytes[m.offset % bytes.length]! ^= m.mask || 1;
      return { tag: node.tag, contents: bytes };
    }
    case 'tag':
      // Keep the tag number below 31: high tag numbers are a different encoding altogether.
      return { tag: (m.tag & 0xe0) | ((m.tag & 0x1f) % 31), contents: node.contents };
    case 'append':
      return list ? { tag: node.tag, contents: [...list, { tag: m.element[0] ?? 5, contents: m.element.subarray(1) }] } : node;
    case 'remove':
      return list && list.length > 0 ? { tag: node.tag, contents: list.filter((_, i) => i !== pick(m.child)) } : node;
    case 'duplicate':
      return list && list.length > 0 ? { tag: node.tag, contents: [...list.slice(0, pick(m.child) + 1), ...list.slice(pick(m.child))] } : node;
    case 'swap': {
      if (!list || list.length < 2) return node;
      const i = pick(m.child);
      const j = (i + 1) % list.length;
      const swapped = [...list];
      [swapped[i], swapped[j]] = [list[j]!, list[i]!];
      return { tag: node.tag, contents: swapped };
    }
    default:
      return node;
  }
}

function editBytes(der: Uint8Array, m: DerMutation): Uint8Array {
  if (der.length === 0) return der;
  const at = m.at % der.length;
  switch (m.kind) {
    case 'raw-flip': {
      const out = Uint8Array.from(der);
      out[at]! ^= m.mask || 1;
      return out;
    }
    case 'raw-set': {
      const out = Uint8Array.from(der);
      out.set(m.bytes.subarray(0, der.length - at), at);
      return out;
    }
    case 'raw-insert':
      return Uint8Array.from([...der.subarray(0, at), ...m.bytes, ...der.subarray(at)]);
    case 'raw-delete':
      return Uint8Array.from([...der.subarray(0, at), ...der.subarray(at + m.length)]);
    case 'truncate':
      return der.subarray(0, at);
    default:
      return der;
  }
}

/** `der` after `mutations`, in order; a structural edit of bytes that no longer parse is skipped. */
export function mutateDer(der: Uint8Array, mutations: readonly DerMutation[]): Uint8Array {
  let out = der;
  for (const m of mutations) {
    if (m.kind.startsWith('raw-') || m.kind === 'truncate') {
      out = editBytes(out, m);
      continue;
    }
    let root: DerNode;
    try {
      root = parseNode(out, 0, out.length);
    } catch (e) {
      if (e instanceof DerError) continue;
      throw e;
    }
    const nodes = nodesOf(root);
    const target = nodes[m.at % nodes.length]!;
    out = encodeNode(replace(root, target, editNode(target, m)));
  }
  return out;
}

const smallBytes = fc.uint8Array({ maxLength: 40 });
const at = fc.nat();

/** One mutation, structural or raw. */
const derMutation: fc.Arbitrary<DerMutation> = fc.oneof(
  fc.record({ kind: fc.constant('contents' as const), at, bytes: smallBytes }),
  fc.record({ kind: fc.constant('flip' as const), at, offset: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('tag' as const), at, tag: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('append' as const), at, element: smallBytes }),
  fc.record({ kind: fc.constant('remove' as const), at, child: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate' as const), at, child: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at, child: fc.nat() }),
  fc.record({ kind: fc.constant('raw-flip' as const), at, mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('raw-set' as const), at, bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('raw-insert' as const), at, bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('raw-delete' as const), at, length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at }),
);

/** One to three mutations: most single edits already break a signature, stacking finds the rest. */
export const derMutations: fc.Arbitrary<readonly DerMutation[]> = fc.array(derMutation, { minLength: 1, maxLength: 3 });
