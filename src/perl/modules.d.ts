/* The Perl programs (src/perl/*.pl, src/stage/stage.pl) are bundled as text: esbuild's text loader for the executable, scripts/text-modules.mjs when Node runs src/ directly (tests, bench). */
declare module "*.pl" {
  const text: string;
  export default text;
}
