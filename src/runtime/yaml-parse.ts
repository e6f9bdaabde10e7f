// yaml's parse, behind a module of our own so that kubeconfig.ts can load it
// lazily: a dynamic import() of a CommonJS package (yaml ships CommonJS to
// node) yields only its default export in the kubectl plugin's esbuild bundle
// (scripts/bundle-cli.ts), while a module of ours keeps its named exports.
export { parse } from 'yaml';
