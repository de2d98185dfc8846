import type { PluginDependency } from '../../src/plugins/toolkit/types.js';

/** spec: "Endpoints", the access-point dependency with its five operations and two socket events. */
export const accessPointsDependency: PluginDependency = {
  identifier: 'access_points',
  model: 'AccessPoint',
  permissionKey: 'access_points',
  permissions: ['view_access_points', 'manage_access_points'],
  operations: {
    'access-points.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-points',
    'access-points.show': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}',
    'access-points.store': 'post:/v1/projects/{teamSlug}/{projectSlug}/access-points',
    'access-points.update': 'put:/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}',
    'access-points.destroy': 'delete:/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}',
  },
  events: { AccessPointUpdated: 'AccessPointUpdated', AccessPointDeleted: 'AccessPointDeleted' },
};
