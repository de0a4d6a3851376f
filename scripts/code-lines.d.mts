// The types of scripts/code-lines.mjs, for test/unit/project/code-lines.test.ts.
export interface CountedFile {
  path: string;
  lines: number;
}
export interface BundleRow {
  row: "root start" | "audit" | "spawner (resident + grab + stage)" | "shim, private job (shim + stage)";
  files: CountedFile[];
  lines: number;
}
export declare const BUNDLES: ReadonlyArray<{ row: BundleRow["row"]; meta: string }>;
export declare function scriptCodeLines(text: string, fileName?: string): number;
export declare function perlCodeLines(text: string): number;
export declare function fileCodeLines(path: string): number;
export declare function bundleFiles(metafile: unknown, stage: string): string[];
export declare function mainScriptCodeLines(text: string): number;
export declare function measure(build?: string): { mainScript: number; rows: BundleRow[] };
