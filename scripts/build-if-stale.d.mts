// Types of build-if-stale.mjs, for its test.

/** Why the workspace at `dir` must be built, or undefined when its dist/ is current; `shared` are files every workspace is built from. */
export function staleness(dir: string, shared: readonly string[]): string | undefined;
/** The workspaces of the repository at `repo` that have a build script. */
export function builtWorkspaces(repo: string): string[];
