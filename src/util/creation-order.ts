// The order in which the first comer wins, wherever the operator has to pick
// one: the app of a namespace that routes a host, the HostClaim that shadows an
// overlapping younger one, the apps a namespace's cache budget grants. Earlier
// creationTimestamp first, then name: both are stored on the objects, so every
// replica, after every restart, picks the same one.

/** What the order reads of an object: its creationTimestamp ('' when unknown: first) and its name. */
export interface Created { created: string; name: string }

/** A sort comparator: negative when `a` came first, positive when `b` did, 0 for the same object. */
export function byCreation(a: Created, b: Created): number {
  if (a.created !== b.created) return a.created < b.created ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
