import type { Logger } from '../logger.js';
import { generatePassword } from '../auth/password.js';
import type { UserRepository } from './users.js';
import { DEFAULT_TEAM_SLUG, type TeamRepository } from './teams.js';
import type { ProjectRepository } from './projects.js';

export interface BootstrapDeps {
  users: UserRepository;
  teams: TeamRepository;
  projects: ProjectRepository;
  log: Logger;
}

export interface BootstrapOptions {
  adminEmail: string;
  adminPassword: string | null;
  timezone: string;
}

/** First start: an administrator (the password from config, else generated and logged once),
 * a default team and a default project. Later starts change nothing. */
export async function bootstrapFirstRun(deps: BootstrapDeps, options: BootstrapOptions): Promise<void> {
  await ensureAdministrator(deps, options);
  ensureDefaultProject(deps, options.timezone);
}

/** An administrator exists: created when there is none (also the way back in if every
 * administrator was deleted). */
async function ensureAdministrator({ users, log }: BootstrapDeps, options: BootstrapOptions): Promise<void> {
  if (users.countAdmins() > 0) return;
  const email = options.adminEmail.toLowerCase();
  if (users.emailTaken(email)) {
    log.error({ email }, 'no administrator exists and the administrator email belongs to another user; set GATEHOUSE_ADMIN_EMAIL');
    return;
  }
  const password = options.adminPassword ?? generatePassword();
  const admin = await users.create({ name: 'Administrator', email, password, is_admin: true });
  if (options.adminPassword) log.info({ email: admin.email }, 'administrator created');
  // Shown this once only; it is stored as a scrypt hash.
  else log.warn({ email: admin.email, generatedPassword: password }, `administrator created with generated password: ${password}`);
}

/** The default team, and a default project in it when there is no project at all. */
export function ensureDefaultProject({ teams, projects, log }: Omit<BootstrapDeps, 'users'>, timezone: string): void {
  const team = teams.findBySlug(DEFAULT_TEAM_SLUG) ?? teams.create('Default team', DEFAULT_TEAM_SLUG);
  if (projects.listReachable({ userId: 0, isAdmin: true }, 0, 1).total > 0) return;
  const project = projects.create({ teamId: team.id, name: 'Default project', slug: 'default', timezone });
  log.info({ team: team.slug, project: project.slug }, 'default project created');
}
