import { Option } from "commander";
import type { Entry } from "../../../gen/registry/v1/entry_pb.js";
import { MODERATION_POLICIES, type LifecycleAction, type ModerationAction, type ModerationPolicy } from "../../domain/action-payloads.js";
import type { RegistryClient, SigningKey } from "../../sdk/registry-client.js";
import type { ClientOptions } from "../client-options.js";

/** What the options of one of these commands hold (each command takes some of them). */
export interface EntryActionOptions extends ClientOptions {
  readonly key?: string;
  readonly reason?: string;
  readonly replacement?: string;
  readonly policy?: ModerationPolicy;
  readonly note?: string;
}

/** What a command sends: its options, the key loaded and the access token. */
export type SignedCall = Omit<EntryActionOptions, "key"> & { readonly key: SigningKey; readonly token: string };

/** One signed action on versions or a name (docs/lifecycle.md), as a command of its own. */
export interface EntryActionCommand {
  readonly name: LifecycleAction | ModerationAction;
  /** The word of its output lines: `deprecated did:…@1.2.0`. */
  readonly done: string;
  readonly description: string;
  /** archive and unarchive act on the name: a bare DID only. */
  readonly nameOnly: boolean;
  readonly options: readonly Option[];
  /** Who may, and which token it is sent with: the end of its --help. */
  readonly help: string;
  /** The scope of the access token it needs, given the DID's entry type. */
  scope(entryType: string): string;
  send(client: RegistryClient, did: string, call: SignedCall): Promise<Entry[]>;
}

const reason = (required: boolean) =>
  new Option("--reason <text>", `why, public and signed: 1-500 characters${required ? "" : " (default: none)"}`).makeOptionMandatory(
    required,
  );
const replacement = () => new Option("--replacement <did>", "an existing entry DID to use instead, with or without @version");
const policy = () => new Option("--policy <policy>", "the policy applied").choices(MODERATION_POLICIES).makeOptionMandatory();
const note = (why: string) => new Option("--note <text>", `${why}, public and signed: 1-1,000 characters`).makeOptionMandatory();

const LIFECYCLE_HELP = `
Signed with the key (its DID must be the subject of the login's root token), sent with an access
token carrying registry.publish.<entryType>, taken from \`registry login\` as publish takes it.
Undoing what is not in place succeeds and changes nothing.`;

const MODERATION_HELP = `
Signed with the key, sent with an access token carrying registry.admin, exchanged for the root
token of \`registry login\`: that root token must grant registry.admin, and its subject must be the
key's DID (registry login --scopes registry.admin).`;

type Declared = Pick<EntryActionCommand, "done" | "description" | "options"> & { readonly nameOnly?: boolean };

/** A publisher's action: a controller of the name with registry.publish.<entryType>. */
function lifecycle(name: LifecycleAction, declared: Declared): EntryActionCommand {
  return {
    name,
    nameOnly: false,
    ...declared,
    help: LIFECYCLE_HELP,
    scope: (entryType) => `registry.publish.${entryType}`,
    send: (client, did, { key, token, reason, replacement }) => client.changeLifecycle(did, name, { key, token, reason, replacement }),
  };
}

/** A moderator's decision: a token with registry.admin. */
function moderation(name: ModerationAction, declared: Declared): EntryActionCommand {
  return {
    name,
    nameOnly: false,
    ...declared,
    help: MODERATION_HELP,
    scope: () => "registry.admin",
    send: (client, did, { key, token, policy, note }) => client.moderate(did, name, { key, token, policy, note: note ?? "" }),
  };
}

/** Every command, declared once: registration, help and output are derived from this table. */
export const ENTRY_ACTION_COMMANDS: readonly EntryActionCommand[] = [
  lifecycle("deprecate", {
    done: "deprecated",
    description: "deprecate versions: advisory, they stay resolvable and eligible for latest",
    options: [reason(true), replacement()],
  }),
  lifecycle("undeprecate", {
    done: "undeprecated",
    description: "lift a deprecation",
    options: [reason(false)],
  }),
  lifecycle("yank", {
    done: "yanked",
    description: "yank versions: resolvable by exact version only, neither latest nor discovered",
    options: [reason(true)],
  }),
  lifecycle("unyank", { done: "unyanked", description: "lift a yank", options: [reason(false)] }),
  lifecycle("archive", {
    done: "archived",
    description: "archive a name: no new version can be published until unarchive",
    options: [reason(true)],
    nameOnly: true,
  }),
  lifecycle("unarchive", { done: "unarchived", description: "unarchive a name", options: [reason(false)], nameOnly: true }),
  moderation("quarantine", {
    done: "quarantined",
    description: "(moderators) hold versions while a report is examined",
    options: [policy(), note("what was found")],
  }),
  moderation("unquarantine", {
    done: "unquarantined",
    description: "(moderators) lift a quarantine",
    options: [note("why it is lifted")],
  }),
  moderation("remove", {
    done: "removed",
    description: "(moderators) remove versions for good: their content is withheld from every read",
    options: [policy(), note("what was found")],
  }),
];
