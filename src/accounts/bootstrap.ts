import type { Logger } from '../logger.js';
import { generatePassword } from '../auth/password.js';
import type { UserRepository } from './users.js';
import type { TeamRepository } from './teams.js';
import type { ProjectRepository } from './projects.js';
import { DEFAULT_TEAM_SLUG } from './teams.js';

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
  if (deps.users.count() === 0) {
    const password = options.adminPassword ?? generatePassword();
    const admin = await deps.users.create({ name: 'Administrator', email: options.adminEmail.toLowerCase(), password, is_admin: true });
    if (options.adminPassword) deps.log.info({ email: admin.email }, 'administrator created');
    // Shown this once only; it is stored as a scrypt hash.
    else deps.log.warn({ email: admin.email, generatedPassword: password }, `administrator created with generated password: ${password}`);
  }
  const team = deps.teams.findBySlug(DEFAULT_TEAM_SLUG) ?? deps.teams.create('Default team', DEFAULT_TEAM_SLUG);
  if (!deps.projects.findBySlugs(team.slug, 'default') && deps.projects.listReachable({ userId: 0, isAdmin: true }, 0, 1).total === 0) {
    const project = deps.projects.create({ teamId: team.id, name: 'Default project', slug: 'default', timezone: options.timezone });
    deps.log.info({ team: team.slug, project: project.slug }, 'default project created');
  }
}
