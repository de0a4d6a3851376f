/*
 * How stage.pl is cut: a section starts with a line "# ---- TITLE ----", and
 * "# ---- [ROLE] TITLE ----" is ROLE's alone ([private]: a private job's, in
 * the agent's program). stage.ts cuts each role's program at run time,
 * stage-source.ts what each bundle carries at build time.
 */
export const SECTION = "\n# ---- ";
export const ROLE_SECTION = `${SECTION}[`;
/** read_request's list of roles, which each role's program narrows to its own. */
export const STAGE_ROLES = "(service|agent|signal|cleanup)";
/** A private job's own steps: sections kept only in the agent's program for a private job. */
export const PRIVATE_SECTION = "private";
