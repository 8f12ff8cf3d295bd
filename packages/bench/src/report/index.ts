export { renderReportHtml, renderReportSvg, writeReport, readResult, reportFormat } from './render';
export type { ReportFormat, ReportRun } from './render';
export { reportCommand, REPORT_USAGE } from './command';
export { SAMPLE_KEYS } from '../gauge-samples';
