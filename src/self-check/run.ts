export function runSelfCheck(_r: { json: boolean; probe: boolean }): number { return 0; }
