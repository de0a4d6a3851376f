/*
 * The variables that make a process load code chosen by whoever set them,
 * written here and never read from src/exec/environment.ts's
 * CODE_LOADING_VARIABLES: a name dropped from that list must fail the tests
 * that use this one (exec/environment.test.ts, entrypoint/service-env.test.ts).
 * One name per line; a prefix of the list is stood for by names under it.
 */
export const CODE_LOADING_NAMES: readonly string[] = [
  "LD_PRELOAD", // ld.so(8), the LD_ prefix
  "LD_LIBRARY_PATH",
  "LD_AUDIT",
  "GCONV_PATH", // glibc iconv
  "GLIBC_TUNABLES", // CVE-2023-4911
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_REPL_EXTERNAL_MODULE",
  "NODE_COMPILE_CACHE",
  "OPENSSL_CONF",
  "OPENSSL_ENGINES",
  "OPENSSL_MODULES",
  "PYTHONPATH",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PERL5LIB",
  "PERL5OPT",
  "PERLLIB",
  "RUBYOPT",
  "RUBYLIB",
  "BASH_ENV",
  "ENV",
  "PS4",
  "PROMPT_COMMAND",
  "SHELLOPTS",
  "BASHOPTS",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
];
