/** A page's title, and beside it the page's main action when it offers one now ("Invite member", "Add webhook"). */
export function PageHeading({ title, action }: { title: string; action?: { label: string; onClick: () => void } }) {
  return (
    <div className="page-heading">
      <h1>{title}</h1>
      {action !== undefined && (
        <button type="button" className="button button-primary" onClick={action.onClick}>
          {action.label}
        </button>
      )}
    </div>
  );
}
