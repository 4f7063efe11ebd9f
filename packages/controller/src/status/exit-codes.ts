/**
 * Exit codes of `eso-mtls status` and `eso-mtls renew`, so that scripts can gate on them
 * (docs/cli.md). 2 is the code every eso-mtls command uses for a usage error.
 */
export const StatusExit = {
  /** Everything checked is healthy, and everything could be checked. */
  healthy: 0,
  /** Something needs attention: a problem is named in the output. (renew: nothing to renew.) */
  attention: 1,
  /** A flag, an environment variable or the kubeconfig is unusable. */
  usage: 2,
  /** The apiserver could not be reached, or refused the credentials or the first read. */
  unreachable: 3,
  /** Healthy as far as it could see, but some checks were not made for lack of rights. */
  incomplete: 4,
} as const;

/** One of {@link StatusExit}. */
export type StatusExitCode = (typeof StatusExit)[keyof typeof StatusExit];

/** The exit code of a status report: any problem wins over checks that could not be made. */
export function statusExitCode(summary: { readonly problems: number; readonly unchecked: number }): StatusExitCode {
  if (summary.problems > 0) return StatusExit.attention;
  return summary.unchecked > 0 ? StatusExit.incomplete : StatusExit.healthy;
}
