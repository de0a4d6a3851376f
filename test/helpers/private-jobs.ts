/*
 * What another job, private or not, gets against private job B
 * (test/fixtures/private-jobs.mjs): DAC keeps B's lease from every process
 * without its group; Landlock scopes signals and /proc; the seccomp filter
 * refuses prlimit of another process. Shared by the sandbox test and image
 * item 3f.
 */
export const AGAINST_PRIVATE: Readonly<Record<string, string>> = {
  "read-home": "EACCES",
  "read-tmp": "EACCES",
  "write-tmp": "EACCES",
  "plant-bashrc": "EACCES",
  "list-tmp": "EACCES",
  "connect-socket": "EACCES",
  kill: "EPERM",
  environ: "EACCES",
  prlimit: "EPERM",
};
