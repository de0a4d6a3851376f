// The types of what test/unit/project/bench-report.test.ts imports from bench/lib/markdown.mjs.
export declare const KEPT_MARKER: string;
export declare function keptPart(previous: string): string;
