/**
 * The permissions of a deno.json task as command-line flags: its permission set (`-P=name`, from
 * deno.json's `"permissions"`) written out, then its own `--allow-`, `--deny-` and `--ignore-`
 * flags. For commands no deno.json of ours applies to: the tasks `new` writes into an operator's
 * own repository, and the operator that tests start in another folder.
 */

/** One permission of a set: all, none, a list, or allow/deny/ignore parts. */
export type Grant = boolean | string[] | {
  allow?: boolean | string[];
  deny?: boolean | string[];
  ignore?: boolean | string[];
};

/** deno.json's `"permissions"`: each set by name. */
export type PermissionSets = Record<string, Record<string, Grant>>;

const SET = /^(?:-P|--permission-set)=(\S+)$/;
const OWN_FLAG = /^--(?:allow|deny|ignore)-/;

/** The set a task's command names (`-P=name`), if any. */
export function permissionSetOf(command: string): string | undefined {
  for (const word of command.split(/\s+/)) {
    const set = word.match(SET)?.[1];
    if (set) return set;
  }
  return undefined;
}

/**
 * The flags that grant what `command`'s permission set and its own flags grant. Paths stay as
 * written: relative ones resolve from where the command runs, as a task's do from its deno.json's
 * folder. A bare `-P` (the config's `test` or `bench` set) is refused: say the set's name.
 */
export function permissionFlags(command: string, sets: PermissionSets): string[] {
  return command.split(/\s+/).flatMap((word) => {
    if (word === "-P" || word === "--permission-set") {
      throw new Error(`"${command}": name its permission set (-P=<name>)`);
    }
    const set = word.match(SET)?.[1];
    if (set) return setFlags(sets, set);
    return OWN_FLAG.test(word) ? [word] : [];
  });
}

/** The flags that grant what `sets[name]` grants. */
export function setFlags(sets: PermissionSets, name: string): string[] {
  const set = sets[name];
  if (!set) throw new Error(`deno.json has no permission set "${name}" (its "permissions")`);
  const flags: string[] = [];
  for (const [permission, grant] of Object.entries(set)) {
    if (permission === "all") {
      if (grant === true) flags.push("--allow-all");
      continue;
    }
    const parts = typeof grant === "object" && !Array.isArray(grant) ? grant : { allow: grant };
    for (const [verb, value] of Object.entries(parts)) {
      if (value === false || value === undefined) continue;
      flags.push(
        value === true ? `--${verb}-${permission}` : `--${verb}-${permission}=${value.join(",")}`,
      );
    }
  }
  return flags;
}
